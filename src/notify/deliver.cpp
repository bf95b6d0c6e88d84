#include "notify/deliver.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>

#include "notify/mime.hpp"
#include "notify/policy.hpp"
#include "notify/transport.hpp"
#include "notify/trim.hpp"
#include "util/fd.hpp"

namespace notify {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Time kept back from curl's own timeout so that the child can record the
// failure in the sidecar before the parent's deadline kills it.
constexpr milliseconds k_record_margin{300};

// A forked child must not run the caller's handlers (they would flag the
// caller's state) nor inherit a blocked mask (SIGALRM is our backstop).
void reset_signals_in_child() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2}) {
    std::signal(sig, SIG_DFL);
  }
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

EntryResult deliver_one(const config::Config& config, const Outbox& outbox, const std::string& id,
                        Clock::time_point deadline) {
  EntryResult r;
  r.id = id;
  auto claimed = outbox.claim(id);
  if (!claimed) {
    r.reason = claimed.error();
    return r;
  }
  if (!claimed->valid()) {
    r.skipped = true;
    r.reason = "being delivered by another process, or already delivered";
    return r;
  }
  ClaimedEntry& entry = *claimed;
  r.channel = entry.meta().channel;
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()) - k_record_margin;
  if (left < milliseconds(100)) {
    r.reason = "no time left before the deadline";
    (void)outbox.record_failure(entry, r.reason);
    return r;
  }
  auto payload = outbox.payload(entry.meta());
  SendResult sent;
  if (!payload) {
    sent.stage = "outbox";
    sent.detail = payload.error();
  } else if (r.channel == "webhook") {
    config::Config c = config;
    if (!entry.meta().url.empty()) {
      c.webhook_url = entry.meta().url;  // where it was meant to go when queued
    }
    sent = webhook_post(c, *payload, left);
  } else if (r.channel == "ntfy") {
    config::Config c = config;
    if (!entry.meta().url.empty()) {
      c.ntfy_url = entry.meta().url;
    }
    if (auto m = parse_ntfy(*payload); m) {
      sent = ntfy_post(c, *m, left);
    } else {
      sent.stage = "outbox";
      sent.detail = m.error();
    }
  } else {
    const auto& to = entry.meta().to.empty() ? config.to : entry.meta().to;
    // Queued without recipients (no SMTP configured then): the header gets the
    // ones it is sent to now, not "undisclosed-recipients".
    *payload = with_recipients(*payload, to);
    sent = smtp_send(config, to, *payload, left);
    // Refused for its size: send it again without what does not fit, naming it,
    // rather than keep it in the outbox forever.
    if (sent.size_refused(payload->size())) {
      if (auto smaller = trim_attachments(*payload, sent.size_limit, sent.describe())) {
        auto left2 =
            std::chrono::duration_cast<milliseconds>(deadline - Clock::now()) - k_record_margin;
        if (left2 >= milliseconds(100)) {
          SendResult again = smtp_send(config, to, *smaller, left2);
          if (!again.ok) {
            again.detail = "sent again without attachments, refused too: " + again.detail;
          }
          sent = again;
        }
      }
    }
  }
  if (sent.ok) {
    r.ok = true;
    if (auto st = outbox.mark_sent(entry); !st) {
      r.reason = "delivered, but: " + st.error();
    }
    return r;
  }
  r.reason = sent.describe();
  (void)outbox.record_failure(entry, r.reason);
  return r;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

void ensure_curl_initialised() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::vector<EntryResult> deliver_now(const config::Config& config, const Outbox& outbox,
                                     const std::vector<std::string>& ids,
                                     Clock::time_point deadline) {
  ensure_curl_initialised();
  std::vector<EntryResult> out;
  for (const auto& id : ids) {
    out.push_back(deliver_one(config, outbox, id, deadline));
  }
  return out;
}

std::vector<EntryResult> deliver_isolated(const config::Config& config, const Outbox& outbox,
                                          const std::vector<std::string>& ids,
                                          milliseconds timeout) {
  std::vector<EntryResult> out;
  if (ids.empty()) {
    return out;
  }
  ensure_curl_initialised();
  auto deadline = Clock::now() + timeout;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    for (const auto& id : ids) {
      out.push_back({id, "", false, false, util::errno_error("pipe").message});
    }
    return out;
  }
  util::UniqueFd rd(fds[0]), wr(fds[1]);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    reset_signals_in_child();
    // The child keeps its own deadline: a parent killed meanwhile (a killed
    // `outbox flush`) can no longer stop it, and it holds the entries' locks.
    // It dies with its parent, and by SIGALRM a moment after the deadline.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      ::_exit(1);  // the parent died before prctl took effect
    }
    auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now());
    ::alarm(static_cast<unsigned>(std::max<int64_t>(1, left.count() + 1)));
    rd.reset();
    for (const auto& id : ids) {
      EntryResult r = deliver_one(config, outbox, id, deadline);
      std::string line = r.id + "\t" +
                         (r.ok        ? "ok"
                          : r.skipped ? "skip"
                                      : "fail") +
                         "\t" + r.channel + "\t";
      for (char c : r.reason) {
        line += (c == '\n' || c == '\t') ? ' ' : c;
      }
      (void)util::write_all(wr.get(), line + "\n");
    }
    ::_exit(0);  // not exit(): the caller's atexit handlers and stdio buffers are not ours
  }
  wr.reset();
  std::map<std::string, EntryResult> got;
  std::string failure;
  if (pid < 0) {
    failure = util::errno_error("fork").message;
  } else {
    std::string buf;
    bool timed_out = false;
    for (;;) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd p{rd.get(), POLLIN, 0};
      int n = ::poll(&p, 1, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        timed_out = n == 0;
        break;
      }
      char chunk[4096];
      ssize_t got_n = util::read_retry(rd.get(), chunk, sizeof chunk);
      if (got_n <= 0) {
        break;  // the child closed the pipe: it is exiting
      }
      buf.append(chunk, static_cast<size_t>(got_n));
    }
    if (timed_out) {
      ::kill(pid, SIGKILL);
      failure = "delivery did not finish within " +
                std::to_string(timeout.count() / 1000.0).substr(0, 5) +
                " s (notify timeout); stopped";
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (failure.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      failure = "delivery process " + describe_status(status);
    }
    for (std::string_view rest = buf; !rest.empty();) {
      size_t nl = rest.find('\n');
      std::string line(rest.substr(0, nl));
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1), t3 = line.find('\t', t2 + 1);
      if (t3 == std::string::npos) {
        continue;
      }
      EntryResult r;
      r.id = line.substr(0, t1);
      std::string verdict = line.substr(t1 + 1, t2 - t1 - 1);
      r.ok = verdict == "ok";
      r.skipped = verdict == "skip";
      r.channel = line.substr(t2 + 1, t3 - t2 - 1);
      r.reason = line.substr(t3 + 1);
      got[r.id] = r;
    }
  }
  for (const auto& id : ids) {
    if (auto it = got.find(id); it != got.end()) {
      out.push_back(it->second);
      continue;
    }
    EntryResult r;
    r.id = id;
    r.reason = failure.empty() ? "delivery process gave no result" : failure;
    if (auto claimed = outbox.claim(id); claimed && claimed->valid()) {
      r.channel = claimed->meta().channel;
      (void)outbox.record_failure(*claimed, r.reason);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace notify
