#include "host/scheduler.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "util/child.hpp"
#include "util/fd.hpp"

extern char** environ;

namespace host {

namespace {

// The value of `key=` among whitespace-separated tokens, or "".
std::string_view token_value(std::string_view text, std::string_view key) {
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find_first_of(" \t\n", pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view tok = text.substr(pos, end - pos);
    if (tok.size() > key.size() && tok.substr(0, key.size()) == key && tok[key.size()] == '=') {
      return tok.substr(key.size() + 1);
    }
    pos = end + 1;
  }
  return {};
}

bool plausible_job_id(const std::string& id) {
  if (id.empty() || id.size() > 32) {
    return false;
  }
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> slurm_state_line(std::string_view out, std::string_view job_id) {
  std::string_view state = token_value(out, "JobState");
  if (state.empty()) {
    return std::nullopt;
  }
  std::string line = "scontrol: job " + std::string(job_id) + " JobState=" + std::string(state);
  for (std::string_view key : {"Reason", "RunTime", "TimeLimit"}) {
    if (std::string_view value = token_value(out, key); !value.empty()) {
      line.append(" ").append(key).append("=").append(value);
    }
  }
  return line;
}

std::optional<std::string> query_slurm_job_state(const std::string& job_id,
                                                 std::chrono::milliseconds deadline) {
  if (!plausible_job_id(job_id)) {
    return std::nullopt;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    return std::nullopt;
  }
  util::UniqueFd out_r(p[0]), out_w(p[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  const char* argv[] = {"scontrol", "show", "job", "--oneliner", job_id.c_str(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, "scontrol", &actions, &attr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  out_w.reset();
  if (rc != 0) {
    return std::nullopt;
  }
  util::ChildResult child =
      util::collect_child(pid, out_r.get(), std::chrono::steady_clock::now() + deadline, 64u << 10);
  if (!child.finished || !WIFEXITED(child.status) || WEXITSTATUS(child.status) != 0) {
    return std::nullopt;
  }
  return slurm_state_line(child.output, job_id);
}

}  // namespace host
