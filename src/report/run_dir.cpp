#include "report/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

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
                                                 "GPUALERT_GROUP",
                                                 "GPUALERT_GROUP_SIZE",
                                                 "GPUALERT_ARRAY",
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
  // Where the run's notice goes, for `gpualert sweep` when the wrapper could not send
  // it (an epilog or cron line has none of the user's settings). Not the password
  // file's path, and an SMTP URL only without credentials in it.
  if (key == "GPUALERT_TO" || key == "GPUALERT_FROM" || key == "GPUALERT_SMTP_URL" ||
      key == "GPUALERT_SMTP_USER" || key == "GPUALERT_STATE_DIR" || key == "GPUALERT_CONFIG" ||
      key == "GPUALERT_NOTIFY_TIMEOUT" || key == "GPUALERT_WEBHOOK_FORMAT") {
    return true;
  }
  if (key == "SLURM_MEM_PER_NODE" || key == "SLURM_MEM_PER_CPU" || key == "SLURM_MEM_PER_GPU") {
    return true;  // the job's --mem, named in a host_oom notice
  }
  return key == "SLURM_PROCID" || key == "SLURM_LOCALID" || key == "SLURM_RESTART_COUNT" ||
         key == "SLURM_NODELIST" || key == "SLURM_NTASKS" || key == "SLURM_CLUSTER_NAME";
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
  // Held until the wrapper exits (the descriptor is close-on-exec, so the job does
  // not inherit it): a sweep that can take it knows the wrapper is gone. Where the
  // file system has no locks, the header's pid and boot id tell instead.
  (void)::flock(rd.log_fd.get(), LOCK_EX | LOCK_NB);
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
    if (is_relevant(key) && !looks_secret(key) &&
        !(key == "GPUALERT_SMTP_URL" && kv.find('@', eq) != std::string_view::npos)) {
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
  if (h.pid > 0) {
    out += m + "wrapper: pid=" + std::to_string(h.pid) +
           (h.boot_id.empty() ? "" : " boot=" + h.boot_id) + "\n";
  }
  for (const auto& [k, v] : h.env) {
    out += m + "env: " + k + "=" + util::printable_line(mask_secrets(v)) + "\n";
  }
  out += std::string(k_output_begins) + "\n";
  return out;
}

std::string current_boot_id() {
  char buf[64];
  util::UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
  ssize_t n = fd.valid() ? ::read(fd.get(), buf, sizeof buf - 1) : -1;
  std::string id = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) {
    id.pop_back();
  }
  return id;
}

util::Result<LogFacts> read_log_facts(const std::string& log_path) {
  util::UniqueFd fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    return util::errno_error("open " + log_path);
  }
  if (!S_ISREG(st.st_mode)) {
    return util::Error{log_path + ": not a regular file"};
  }
  LogFacts f;
  f.size = static_cast<uint64_t>(st.st_size);
  auto read_at = [&](off_t from, size_t len) {
    std::string text(len, '\0');
    ssize_t n = ::pread(fd.get(), text.data(), len, from);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return text;
  };
  auto lines_of = [](const std::string& text, auto&& on_line) {
    // A line cut by the read's end is not taken.
    const size_t end = text.rfind('\n');
    for (std::string_view line : util::split_lines(
             std::string_view(text).substr(0, end == std::string::npos ? 0 : end + 1))) {
      on_line(line);
    }
  };
  auto value = [](std::string_view line, std::string_view key) -> std::optional<std::string> {
    std::string prefix = std::string(k_marker) + std::string(key) + ": ";
    if (line.substr(0, prefix.size()) == prefix) {
      return std::string(line.substr(prefix.size()));
    }
    return std::nullopt;
  };
  bool in_header = true;
  lines_of(read_at(0, 64u << 10), [&](std::string_view line) {
    if (!in_header) {
      return;
    }
    if (line == k_output_begins) {
      f.header_complete = true;
      in_header = false;
    } else if (auto v = value(line, "name")) {
      f.header.name = *v;
    } else if (auto v = value(line, "command")) {
      f.command = *v;
    } else if (auto v = value(line, "cwd")) {
      f.header.cwd = *v;
    } else if (auto v = value(line, "host")) {
      f.header.host = *v;
    } else if (auto v = value(line, "user")) {
      f.header.user = *v;
    } else if (auto v = value(line, "started")) {
      f.header.started = *v;
    } else if (auto v = value(line, "env")) {
      if (auto eq = v->find('='); eq != std::string::npos) {
        f.header.env[v->substr(0, eq)] = v->substr(eq + 1);
      }
    } else if (auto v = value(line, "wrapper")) {
      std::string_view w(*v);
      if (w.substr(0, 4) == "pid=") {
        f.header.pid = std::strtol(std::string(w.substr(4)).c_str(), nullptr, 10);
      }
      if (auto b = w.find(" boot="); b != std::string_view::npos) {
        f.header.boot_id = std::string(w.substr(b + 6));
      }
    }
  });
  // The footer: the wrapper's last lines, after "job output ends".
  constexpr size_t k_tail = 16u << 10;
  off_t from = f.size > k_tail ? static_cast<off_t>(f.size - k_tail) : 0;
  std::string tail = read_at(from, k_tail);
  if (size_t at = tail.rfind(std::string(k_output_ends) + "\n"); at != std::string::npos) {
    lines_of(tail.substr(at), [&](std::string_view line) {
      if (auto v = value(line, "ended")) {
        f.ended = *v;
      } else if (auto v = value(line, "status")) {
        f.status = *v;
      }
    });
  }
  return f;
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
