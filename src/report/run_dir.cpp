#include "report/run_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "report/secrets.hpp"
#include "util/text.hpp"

namespace report {

namespace {

bool is_relevant(std::string_view key) {
  static constexpr std::string_view k_exact[] = {"CUDA_VISIBLE_DEVICES",
                                                 "NVIDIA_VISIBLE_DEVICES",
                                                 "ROCR_VISIBLE_DEVICES",
                                                 "HIP_VISIBLE_DEVICES",
                                                 "CUDA_LAUNCH_BLOCKING",
                                                 "RANK",
                                                 "LOCAL_RANK",
                                                 "WORLD_SIZE",
                                                 "MASTER_ADDR",
                                                 "MASTER_PORT",
                                                 "NODE_RANK",
                                                 "PYTORCH_CUDA_ALLOC_CONF",
                                                 "LSB_JOBID",
                                                 "LSB_JOBNAME",
                                                 "PBS_JOBID",
                                                 "PBS_JOBNAME",
                                                 "KUBERNETES_SERVICE_HOST",
                                                 "HOSTNAME"};
  for (auto k : k_exact) {
    if (key == k) {
      return true;
    }
  }
  static constexpr std::string_view k_prefixes[] = {"SLURM_JOB_", "SLURM_STEP_", "NCCL_",
                                                    "SLURM_ARRAY_"};
  for (auto p : k_prefixes) {
    if (key.substr(0, p.size()) == p) {
      return true;
    }
  }
  return key == "SLURM_PROCID" || key == "SLURM_LOCALID" || key == "SLURM_NODELIST" ||
         key == "SLURM_NTASKS" || key == "SLURM_CLUSTER_NAME";
}

bool looks_secret(std::string_view key) {
  for (auto word : {"TOKEN", "SECRET", "PASSWORD", "KEY"}) {
    if (key.find(word) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

util::Result<RunDir> try_base(const std::string& base, const std::string& leaf,
                              const std::string& header_text) {
  if (auto st = util::make_dirs(base, 0755); !st) {
    return util::Error{st.error()};
  }
  RunDir rd;
  std::string base_abs = base;
  if (base_abs.front() != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr) {
      return util::errno_error("getcwd");
    }
    base_abs = std::string(cwd) + "/" + base_abs;
  }
  rd.path = base_abs + "/" + leaf;
  // A second run in the same second by the same pid is impossible, but a
  // leftover directory is not: add a counter instead of reusing it.
  for (int n = 1; ::mkdir(rd.path.c_str(), 0755) != 0; ++n) {
    if (errno != EEXIST || n > 50) {
      return util::errno_error("mkdir " + rd.path);
    }
    rd.path = base_abs + "/" + leaf + "." + std::to_string(n);
  }
  rd.log_path = rd.path + "/output.log";
  rd.log_fd.reset(::open(rd.log_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!rd.log_fd.valid()) {
    auto err = util::errno_error("create " + rd.log_path);
    ::rmdir(rd.path.c_str());
    return err;
  }
  if (auto st = util::write_all(rd.log_fd.get(), header_text); !st) {
    return util::Error{"write " + rd.log_path + ": " + st.error()};
  }
  rd.header_bytes = header_text.size();
  rd.header_lines = static_cast<uint64_t>(std::count(header_text.begin(), header_text.end(), '\n'));
  if (::fsync(rd.log_fd.get()) != 0) {
    return util::errno_error("fsync " + rd.log_path);
  }
  if (auto st = util::fsync_dir(rd.path); !st) {
    return util::Error{st.error()};
  }
  if (auto st = util::fsync_dir(base_abs); !st) {
    return util::Error{st.error()};
  }
  return rd;
}

}  // namespace

std::map<std::string, std::string> relevant_environment(char** envp) {
  std::map<std::string, std::string> out;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) {
      continue;
    }
    auto key = kv.substr(0, eq);
    if (is_relevant(key) && !looks_secret(key)) {
      out.emplace(std::string(key), util::printable_line(kv.substr(eq + 1)));
    }
  }
  return out;
}

std::string format_header(const HeaderFacts& h) {
  std::string m(k_marker);
  std::string out;
  out +=
      m + "gpualert run log (lines starting with '#gpualert# ' are the wrapper's, not the job's)\n";
  out += m + "name: " + util::printable_line(h.name) + "\n";
  out += m + "command: " + util::shell_join(mask_argv(h.argv)) + "\n";
  out += m + "cwd: " + util::shell_quote(h.cwd) + "\n";
  out += m + "host: " + util::printable_line(h.host) + "\n";
  out += m + "user: " + util::printable_line(h.user) + "\n";
  out += m + "started: " + h.started + "\n";
  for (const auto& [k, v] : h.env) {
    out += m + "env: " + k + "=" + util::printable_line(mask_secrets(v)) + "\n";
  }
  out += std::string(k_output_begins) + "\n";
  return out;
}

util::Result<RunDir> create_run_dir(const RunDirRequest& req, const HeaderFacts& header) {
  std::string leaf = util::safe_file_component(req.name) + "-" + util::compact_local(req.start) +
                     "-" + util::safe_file_component(req.host) + "-" + std::to_string(::getpid());
  std::string text = format_header(header);
  auto first = try_base(req.log_dir, leaf, text);
  if (first) {
    return first;
  }
  std::string reason =
      "log directory " + util::shell_quote(req.log_dir) + " is not usable (" + first.error() + ")";
  std::string errors = first.error();
  for (const auto& base : req.fallback_bases) {
    auto r = try_base(base, leaf, text);
    if (r) {
      ::chmod(base.c_str(), 0700);
      r->fallback_reason = reason;
      return r;
    }
    errors += "; " + r.error();
  }
  return util::Error{"cannot create a run directory anywhere: " + errors};
}

}  // namespace report
