#include "host/scheduler.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "util/child.hpp"
#include "util/fd.hpp"
#include "util/text.hpp"

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

std::optional<SlurmJob> parse_slurm_job(std::string_view out, std::string_view job_id) {
  std::string_view state = token_value(out, "JobState");
  if (state.empty()) {
    return std::nullopt;
  }
  SlurmJob job;
  job.id = std::string(job_id);
  job.state = std::string(state);
  job.reason = std::string(token_value(out, "Reason"));
  job.run_time = std::string(token_value(out, "RunTime"));
  job.time_limit = std::string(token_value(out, "TimeLimit"));
  job.std_err = std::string(token_value(out, "StdErr"));
  job.std_out = std::string(token_value(out, "StdOut"));
  job.exit_code = std::string(token_value(out, "ExitCode"));
  std::string restarts(token_value(out, "Restarts"));
  if (!restarts.empty() && restarts.size() < 6 &&
      restarts.find_first_not_of("0123456789") == std::string::npos) {
    job.restarts = std::stoi(restarts);
  }
  job.line = "scontrol: job " + job.id + " JobState=" + job.state;
  for (auto [key, value] : {std::pair<std::string_view, const std::string*>{"Reason", &job.reason},
                            {"RunTime", &job.run_time},
                            {"TimeLimit", &job.time_limit}}) {
    if (!value->empty()) {
      job.line.append(" ").append(key).append("=").append(*value);
    }
  }
  if (job.restarts > 0) {
    job.line += " Restarts=" + std::to_string(job.restarts);
  }
  return job;
}

std::optional<std::string> slurm_state_line(std::string_view out, std::string_view job_id) {
  auto job = parse_slurm_job(out, job_id);
  return job ? std::optional<std::string>(job->line) : std::nullopt;
}

namespace {

// Starts scontrol (from PATH) with `args`, its stdout on the returned pipe's read end
// (stderr too when `with_stderr`, else /dev/null), stdin on /dev/null, an empty
// signal mask. -1 when it could not be started.
pid_t spawn_scontrol(const std::vector<std::string>& args, bool with_stderr,
                     util::UniqueFd& out_r) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    return -1;
  }
  out_r = util::UniqueFd(p[0]);
  util::UniqueFd out_w(p[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), STDOUT_FILENO);
  if (with_stderr) {
    posix_spawn_file_actions_adddup2(&actions, out_w.get(), STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  static char name[] = "scontrol";
  argv.push_back(name);
  for (const auto& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, "scontrol", &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

}  // namespace

std::optional<SlurmJob> query_slurm_job(const std::string& job_id,
                                        std::chrono::milliseconds deadline) {
  if (!plausible_job_id(job_id)) {
    return std::nullopt;
  }
  util::UniqueFd out_r;
  pid_t pid = spawn_scontrol({"show", "job", "--oneliner", job_id}, false, out_r);
  if (pid < 0) {
    return std::nullopt;
  }
  util::ChildResult child =
      util::collect_child(pid, out_r.get(), std::chrono::steady_clock::now() + deadline, 64u << 10);
  if (!child.finished || !WIFEXITED(child.status) || WEXITSTATUS(child.status) != 0) {
    return std::nullopt;
  }
  return parse_slurm_job(child.output, job_id);
}

std::optional<std::string> query_slurm_job_state(const std::string& job_id,
                                                 std::chrono::milliseconds deadline) {
  auto job = query_slurm_job(job_id, deadline);
  return job ? std::optional<std::string>(job->line) : std::nullopt;
}

std::vector<std::string> slurmstepd_lines(const std::string& path, std::string_view job_id) {
  std::vector<std::string> found;
  if (path.empty() || job_id.empty()) {
    return found;
  }
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return found;
  }
  constexpr off_t k_tail = 256 << 10;
  off_t from = st.st_size > k_tail ? st.st_size - k_tail : 0;
  std::string text(static_cast<size_t>(st.st_size - from), '\0');
  ssize_t n = ::pread(fd.get(), text.data(), text.size(), from);
  if (n <= 0) {
    return found;
  }
  text.resize(static_cast<size_t>(n));
  // "*** JOB 7 ON n1 CANCELLED AT ...", "*** STEP 7.0 ON n1 ...", "Job 7 exceeded memory
  // limit (...), being killed", "Detected 1 oom_kill event in StepId=7.batch".
  const std::string id(job_id);
  const std::string marks[] = {"JOB " + id + " ", "STEP " + id + ".", "Job " + id + " ",
                               "StepId=" + id + "."};
  for (std::string_view line : util::split_lines(text)) {
    size_t stepd = line.find("slurmstepd");
    if (stepd == std::string_view::npos || line.size() > 512) {
      continue;
    }
    for (const auto& mark : marks) {
      if (line.find(mark, stepd) != std::string_view::npos) {
        line = line.substr(stepd);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
          line.remove_suffix(1);
        }
        found.emplace_back(line);
        break;
      }
    }
  }
  if (found.size() > 4) {
    found.erase(found.begin(), found.end() - 4);  // the last ones tell the end
  }
  return found;
}

std::optional<std::string> slurmstepd_banner(const std::string& path, std::string_view job_id) {
  auto lines = slurmstepd_lines(path, job_id);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->find("*** ") != std::string::npos) {
      return *it;
    }
  }
  return std::nullopt;
}

std::vector<std::string> slurm_evidence(const SlurmJob& job, int restart_count_at_start,
                                        const std::string& own_stderr) {
  std::vector<std::string> lines = {job.line};
  auto said = slurmstepd_lines(job.std_err, job.id);
  if (said.empty() && job.std_out != job.std_err) {
    said = slurmstepd_lines(job.std_out, job.id);
  }
  if (said.empty()) {
    said = slurmstepd_lines(own_stderr, job.id);
  }
  lines.insert(lines.end(), said.begin(), said.end());
  if (job.restarts > restart_count_at_start) {
    lines.push_back("scontrol: job " + job.id +
                    " was requeued (Restarts=" + std::to_string(job.restarts) + "): this was run " +
                    std::to_string(restart_count_at_start + 1) + " of it, and it will run again");
  }
  return lines;
}

std::optional<int> requeued_run(std::string_view line) {
  constexpr std::string_view k_mark = "): this was run ";
  if (line.rfind("scontrol: job ", 0) != 0 ||
      line.find(" was requeued (") == std::string_view::npos) {
    return std::nullopt;
  }
  size_t at = line.find(k_mark);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  int n = 0;
  for (size_t i = at + k_mark.size(); i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
    n = n * 10 + (line[i] - '0');
    if (n > 1000000) {
      return std::nullopt;
    }
  }
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

bool CommentWrite::finish() {
  if (m_pid <= 0) {
    return false;
  }
  util::ChildResult child = util::collect_child(m_pid, m_output.get(), m_deadline, 4096);
  m_pid = -1;
  m_output.reset();
  return child.finished && WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0;
}

std::string slurm_comment_text(std::string_view text, size_t max_bytes) {
  std::string out;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    char put = ch;
    if (c < 0x20 || c == 0x7f) {
      put = ' ';
    } else if (ch == '"' || ch == '`') {
      put = '\'';
    }
    if (put == ' ' && (out.empty() || out.back() == ' ')) {
      continue;
    }
    out += put;
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  if (out.size() > max_bytes && max_bytes > 3) {
    size_t cut = max_bytes - 3;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) {
      --cut;  // not inside a UTF-8 sequence
    }
    out = out.substr(0, cut) + "...";
  }
  return out;
}

CommentWrite start_comment_write(const std::string& job_id, const std::string& comment,
                                 std::chrono::milliseconds deadline) {
  if (!plausible_job_id(job_id) || job_id.find('_') != std::string::npos) {
    return {};  // an array member's own job id is digits only
  }
  util::UniqueFd out_r;
  pid_t pid = spawn_scontrol(
      {"update", "JobId=" + job_id, "Comment=" + slurm_comment_text(comment)}, true, out_r);
  if (pid < 0) {
    return {};
  }
  return CommentWrite(pid, std::move(out_r), std::chrono::steady_clock::now() + deadline);
}

}  // namespace host
