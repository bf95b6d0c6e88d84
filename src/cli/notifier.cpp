#include "cli/notifier.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <sstream>

#include "cli/sweep.hpp"
#include "notify/pending.hpp"
#include "notify/policy.hpp"
#include "supervise/exit_status.hpp"
#include "util/child.hpp"
#include "util/fd.hpp"

extern char** environ;

namespace cli {

namespace {

constexpr const char* k_helper_name = "gpualert-notify";

pid_t spawn_helper(const std::vector<std::string>& args, int out_fd, bool detach) {
  std::string helper = notify_helper_path();
  if (helper.empty()) {
    errno = ENOENT;
    return -1;
  }
  return util::spawn_quiet(helper, k_helper_name, args, out_fd, detach);
}

// --notify-timeout is the most `run` waits for the notification, all of it: the
// helper's delivery deadline leaves part of it for building the message (reading
// and gzipping the log takes up to ~1 s for a huge one).
std::chrono::milliseconds delivery_budget(std::chrono::milliseconds total) {
  using std::chrono::milliseconds;
  milliseconds reserve = std::min(milliseconds(1000), total / 4);
  return total - reserve;
}

std::vector<std::string> config_args(const std::string& config_file,
                                     std::chrono::milliseconds timeout) {
  std::vector<std::string> args;
  if (!config_file.empty()) {
    args.insert(args.end(), {"--config", config_file});
  }
  args.insert(args.end(), {"--notify-timeout", std::to_string(timeout.count()) + "ms"});
  return args;
}

}  // namespace

std::string notify_helper_path() { return util::sibling_program(k_helper_name); }

NotifyOutcome notify_via_helper(const std::string& run_dir, const std::vector<std::string>& attach,
                                uint64_t budget_bytes, const std::string& config_file,
                                const config::Config& config, int64_t hold_seconds,
                                const std::vector<std::string>& supersede,
                                const std::string& report_path) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return {false, false, "", std::string("pipe: ") + std::strerror(errno)};
  }
  util::UniqueFd rd(fds[0]), wr(fds[1]);
  std::vector<std::string> args = {"notify", "--report-outcome", "--budget",
                                   std::to_string(budget_bytes)};
  auto more = config_args(config_file, delivery_budget(config.notify_timeout));
  args.insert(args.end(), more.begin(), more.end());
  for (const auto& to : config.to) {
    args.insert(args.end(), {"--to", to});
  }
  for (const auto& a : attach) {
    args.insert(args.end(), {"--attach", a});
  }
  if (hold_seconds > 0) {
    args.insert(args.end(), {"--hold", std::to_string(hold_seconds)});
  }
  for (const auto& id : supersede) {
    args.insert(args.end(), {"--supersede", id});
  }
  if (!report_path.empty()) {
    args.insert(args.end(), {"--report", report_path});
  }
  args.push_back(run_dir);
  pid_t pid = spawn_helper(args, wr.get(), false);
  wr.reset();
  if (pid < 0) {
    // Without the helper nothing here can build the message (that needs libcurl):
    // keep what it needs, for `outbox flush` once the helper is there.
    std::string why =
        notify_helper_path().empty()
            ? std::string(k_helper_name) + " is not installed beside gpualert"
            : std::string("cannot start ") + k_helper_name + ": " + std::strerror(errno);
    notify::PendingNotice pending;
    pending.run_dir = run_dir;
    pending.report_path = report_path;
    pending.attach = attach;
    pending.to = config.to;
    pending.budget_bytes = budget_bytes;
    pending.reason = why;
    auto queued = hold_seconds > 0 ? util::Result<std::string>(util::Error{"held notices are not "
                                                                           "kept without it"})
                                   : notify::queue_pending(config, pending);
    if (!queued) {
      return {false, false, "",
              why + "; the notice could not be queued either (" + queued.error() +
                  "); report and log are in " + run_dir};
    }
    return {false, true, *queued,
            why + ": the notice is queued in " + *queued + "; install " + k_helper_name +
                " in the same directory as gpualert, then run `gpualert outbox flush`"};
  }
  // The helper keeps its own (shorter) delivery deadline; this one bounds all of
  // it, a helper that crashed or hung while building the message included.
  util::ChildResult child =
      util::collect_child(pid, rd.get(), std::chrono::steady_clock::now() + config.notify_timeout);
  if (!child.finished) {
    return {false, false, "",
            "the notifier did not finish in time and was stopped; `gpualert notify " + run_dir +
                "` sends it again"};
  }
  const std::string& got = child.output;
  const int status = child.status;
  auto nl1 = got.find('\n');
  if (!WIFEXITED(status) || got.size() < 2 || nl1 == std::string::npos) {
    std::string how = WIFSIGNALED(status)
                          ? "was killed by " + supervise::signal_name(WTERMSIG(status))
                          : "failed";
    return {false, false, "",
            "the notifier " + how + "; `gpualert notify " + run_dir + "` sends it again"};
  }
  auto nl2 = got.find('\n', nl1 + 1);
  NotifyOutcome o;
  o.delivered = got[0] == '1';
  o.queued = got[1] == '1';
  // The first line: the two flags, then the outbox ids, space-separated.
  std::istringstream ids(got.substr(2, nl1 - 2));
  for (std::string id; ids >> id;) {
    o.ids.push_back(id);
  }
  o.where = got.substr(nl1 + 1, nl2 == std::string::npos ? std::string::npos : nl2 - nl1 - 1);
  o.detail = nl2 == std::string::npos ? "" : got.substr(nl2 + 1);
  return o;
}

void withdraw_held_notice(const std::vector<std::string>& ids, const std::string& config_file,
                          const config::Config& config) {
  std::vector<std::string> args = {"outbox", "withdraw"};
  auto more = config_args(config_file, config.notify_timeout);
  args.insert(args.end(), more.begin(), more.end());
  args.insert(args.end(), ids.begin(), ids.end());
  pid_t pid = spawn_helper(args, -1, false);
  if (pid > 0) {
    // With a deadline, like every child the wrapper waits for: a hung helper is killed.
    util::collect_child(pid, -1, std::chrono::steady_clock::now() + config.notify_timeout);
  }
}

void flush_outbox_in_background(const config::Config& config, const std::string& config_file) {
  // Most runs find nothing to do: say so without starting anything.
  if (!config::has_channel(config) || !notify::outbox_has_pending(config)) {
    return;
  }
  std::vector<std::string> args = {"outbox", "flush", "--if-idle"};
  auto more = config_args(config_file, config.notify_timeout);
  args.insert(args.end(), more.begin(), more.end());
  (void)spawn_helper(args, -1, true);  // best effort; the job goes on either way
}

void flush_outbox_now(const config::Config& config, const std::string& config_file) {
  if (!notify::outbox_has_pending(config)) {
    return;
  }
  std::vector<std::string> args = {"outbox", "flush"};
  auto more = config_args(config_file, config.notify_timeout);
  args.insert(args.end(), more.begin(), more.end());
  pid_t pid = spawn_helper(args, STDOUT_FILENO, false);
  if (pid > 0) {
    // The flush keeps its own delivery deadline per message; this bounds the whole of it.
    int status = 0;
    auto deadline =
        std::chrono::steady_clock::now() + config.notify_timeout * 4 + std::chrono::seconds(5);
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      ::usleep(20000);
    }
  }
}

void sweep_journal_in_background(const config::Config& config, const std::string& own_entry,
                                 const std::string& config_file) {
  if (!journal_has_orphans(config, own_entry)) {
    return;
  }
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    return;
  }
  self[n] = '\0';
  std::vector<std::string> args = {"sweep", "--journal", "--quiet"};
  if (!config_file.empty()) {
    args.insert(args.end(), {"--config", config_file});
  }
  (void)util::spawn_quiet(self, "gpualert", args, -1, true);  // best effort, like the flush
}

int exec_notify_helper(int argc, char** argv) {
  std::string helper = notify_helper_path();
  if (helper.empty()) {
    std::fprintf(stderr, "gpualert: error: %s not found beside the gpualert binary\n",
                 k_helper_name);
    return 2;
  }
  std::vector<char*> args;
  args.push_back(const_cast<char*>(k_helper_name));
  for (int i = 0; i < argc; ++i) {
    args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  ::execv(helper.c_str(), args.data());
  std::fprintf(stderr, "gpualert: error: exec %s: %s\n", helper.c_str(), std::strerror(errno));
  return 2;
}

}  // namespace cli
