#include "cli/run_state.hpp"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "host/scheduler.hpp"
#include "util/fd.hpp"
#include "util/text.hpp"

namespace cli {

std::string default_job_name(char** envp, const std::string& command_basename) {
  for (const char* key : {"SLURM_JOB_NAME=", "LSB_JOBNAME=", "PBS_JOBNAME="}) {
    const size_t n = std::strlen(key);
    for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, key, n) == 0 && (*e)[n] != '\0') {
        return *e + n;
      }
    }
  }
  return command_basename;
}

std::string journal_dir(const config::Config& config) {
  return config::state_dir(config) + "/running";
}

std::string journal_add(const config::Config& config, const std::string& run_dir) {
  std::string dir = journal_dir(config);
  std::string leaf = run_dir.substr(run_dir.find_last_of('/') + 1);
  std::string entry = dir + "/" + util::safe_file_component(leaf, 200);
  if (::symlink(run_dir.c_str(), entry.c_str()) == 0) {
    return entry;
  }
  if (errno == ENOENT && util::make_dirs(dir, 0700) &&
      ::symlink(run_dir.c_str(), entry.c_str()) == 0) {
    return entry;
  }
  return "";
}

void journal_remove(const std::string& entry) {
  if (!entry.empty()) {
    ::unlink(entry.c_str());
  }
}

std::vector<std::string> scheduler_evidence(const std::map<std::string, std::string>& env,
                                            std::chrono::milliseconds deadline) {
  auto id = env.find("SLURM_JOB_ID");
  if (id == env.end()) {
    return {};
  }
  auto job = host::query_slurm_job(id->second, deadline);
  if (!job) {
    return {};
  }
  int restarts_at_start = 0;
  if (auto rc = env.find("SLURM_RESTART_COUNT"); rc != env.end()) {
    restarts_at_start = std::atoi(rc->second.c_str());
  }
  // Slurm's banner goes to the job's output file; ours is the same file when the
  // batch script runs us with its own stderr.
  char own[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/fd/2", own, sizeof own - 1);
  std::string own_stderr = n > 0 && own[0] == '/' ? std::string(own, static_cast<size_t>(n)) : "";
  return host::slurm_evidence(*job, restarts_at_start, own_stderr);
}

void note_requeue(model::Verdict& verdict, const std::vector<std::string>& scheduler_lines) {
  for (const auto& line : scheduler_lines) {
    if (auto run = host::requeued_run(line)) {
      verdict.fields["requeued_run"] = std::to_string(*run);
      verdict.action =
          "requeued: this was run " + std::to_string(*run) +
          " of the job, and Slurm will start it again by itself (don't resubmit: it "
          "would run twice); make sure it resumes from its last checkpoint" +
          (verdict.label == "node_failure" ? "; tell the admins which node failed" : "");
      return;
    }
  }
}

}  // namespace cli
