#include "supervise/supervisor.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/assert.hpp"
#include "util/text.hpp"

namespace supervise {

namespace {

using Clock = std::chrono::steady_clock;

class Loop {
 public:
  Loop(pid_t child, const SignalIntake& signals, capture::Tee& tee, const SuperviseOptions& o)
      : m_child(child),
        m_signals(signals),
        m_tee(tee),
        m_opt(o),
        m_forwarding(o.mode, o.slurm_step),
        m_start(Clock::now()) {
    if (o.timeout) {
      m_term_at = m_start + *o.timeout;
    }
    if (o.start_helpers) {
      m_helpers_at = m_start + o.helpers_after;
    }
    m_last_output = m_start;
  }

  SuperviseResult run() {
    while (!m_status) {
      poll_streams(next_timeout_ms());
      note_progress();
      check_deadlines();
      maybe_start_helpers();
      maybe_keep_notice();
    }
    drain();
    note_progress();  // output that came with the exit, or in the drain, resumed it too
    SuperviseResult r{*m_status, m_timed_out, m_forwarding.scheduler_ending(), m_events};
    r.stalled_at_s = m_stalled_at;
    r.stall_killed = m_stall_killed;
    r.resumed_at_s = m_resumed_at;
    return r;
  }

 private:
  void signal_job(int sig) {
    // own_group: the whole job tree (DataLoader workers, launcher ranks);
    // shared_group: our group holds other processes of the user's pipeline too,
    // so only the child itself.
    if (m_opt.mode == JobControl::own_group) {
      if (::kill(-m_child, sig) == 0) {
        return;
      }
    }
    ::kill(m_child, sig);
  }

  int next_timeout_ms() const {
    auto now = Clock::now();
    std::optional<Clock::time_point> next;
    if (m_term_at && !m_term_sent) {
      next = *m_term_at;
    } else if (m_kill_at && !m_kill_sent) {
      next = *m_kill_at;
    }
    if (m_helpers_at && (!next || *m_helpers_at < *next)) {
      next = *m_helpers_at;
    }
    if (m_keep_at && (!next || *m_keep_at < *next)) {
      next = *m_keep_at;
    }
    if (auto due = stall_due(); due && (!next || *due < *next)) {
      next = *due;
    }
    if (auto stall = m_tee.next_stall(); stall && (!next || *stall < *next)) {
      next = *stall;  // a terminal that took nothing since: its pipe is read again then
    }
    if (!next) {
      return -1;
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count();
    return ms < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms + 1, 1 << 30));
  }

  // Any byte from the job is progress; the first after a stall notice is a resumption.
  void note_progress() {
    const uint64_t copied = m_tee.copied();
    if (copied == m_copied_seen) {
      return;
    }
    m_copied_seen = copied;
    m_last_output = Clock::now();
    if (m_stalled_at && !m_resumed_at) {
      m_resumed_at = since_start(m_last_output);
    }
  }

  // When the stall is due: --stall after the last output, once per run.
  std::optional<Clock::time_point> stall_due() const {
    if (!m_opt.stall || m_stalled_at || m_status) {
      return std::nullopt;
    }
    return m_last_output + *m_opt.stall;
  }

  double since_start(Clock::time_point t) const {
    return std::chrono::duration<double>(t - m_start).count();
  }

  // Ends the job the --timeout way, for `reason`: SIGTERM now, SIGKILL after --kill-after.
  void stop_job(Clock::time_point now, std::string reason, std::string event) {
    m_term_sent = true;
    signal_job(SIGTERM);
    m_kill_at = now + m_opt.kill_after;
    m_kill_reason = std::move(reason);
    m_events.push_back(std::move(event));
  }

  void check_deadlines() {
    auto now = Clock::now();
    if (auto due = stall_due(); due && now >= *due) {
      m_stalled_at = since_start(now);
      const std::string silent = util::human_duration(to_s(*m_opt.stall));
      if (m_opt.on_stall) {
        m_opt.on_stall();
      }
      if (m_opt.stall_kill && !m_term_sent) {
        m_stall_killed = true;
        stop_job(now, "stalled",
                 "stalled: no output for " + silent +
                     " (--stall), sent SIGTERM to the job (--stall-action kill)");
      } else {
        m_events.push_back("stalled: no output for " + silent +
                           " (--stall); the job was left running");
      }
    }
    if (m_term_at && !m_term_sent && now >= *m_term_at && !m_status) {
      m_timed_out = true;
      stop_job(now, "time limit",
               "time limit: --timeout " + util::human_duration(to_s(*m_opt.timeout)) +
                   " expired, sent SIGTERM to the job");
    }
    if (m_kill_at && !m_kill_sent && now >= *m_kill_at && !m_status) {
      m_kill_sent = true;
      signal_job(SIGKILL);
      m_events.push_back(m_kill_reason + ": still running " +
                         util::human_duration(to_s(m_opt.kill_after)) +
                         " after SIGTERM, sent SIGKILL");
    }
  }

  void maybe_keep_notice() {
    if (!m_opt.keep_notice || m_status) {
      return;
    }
    if (!m_keep_at && !m_kept && m_forwarding.scheduler_ending()) {
      m_keep_at = Clock::now() + m_opt.keep_notice_after;
    }
    if (m_keep_at && Clock::now() >= *m_keep_at) {
      m_keep_at.reset();
      m_kept = true;
      m_opt.keep_notice();
    }
  }

  void maybe_start_helpers() {
    if (m_helpers_at && !m_status &&
        (m_tee.copied() >= m_opt.helpers_after_bytes || Clock::now() >= *m_helpers_at)) {
      m_helpers_at.reset();
      m_opt.start_helpers();
    }
  }

  static double to_s(std::chrono::milliseconds ms) {
    return static_cast<double>(ms.count()) / 1000;
  }

  // Polls the open output pipes (those whose terminal can take more), the terminals
  // with output waiting for them, and the signalfd; copies what arrived, writes what
  // the terminals take, and says whether any output moved (read or written). The
  // pollfd list is rebuilt in reused buffers: this runs once per chunk of output.
  bool poll_streams(int timeout_ms, bool pipes = true) {
    m_fds.clear();
    m_index.clear();
    m_fds.push_back({m_signals.fd(), POLLIN, 0});
    auto& streams = m_tee.streams();
    const auto now = Clock::now();
    for (size_t i = 0; i < streams.size(); ++i) {
      if (pipes && m_tee.want_read(i, now)) {
        m_fds.push_back({streams[i].pipe.get(), POLLIN, 0});
        m_index.push_back(i);
      }
    }
    const size_t first_terminal = m_fds.size();
    const bool extra = m_opt.extra_fd >= 0 && m_opt.on_extra;
    if (extra) {
      m_fds.push_back({m_opt.extra_fd, POLLIN, 0});
      m_index.push_back(0);
    }
    const bool watch = m_opt.watch_fd >= 0 && m_opt.on_watch_readable;
    const size_t watch_at = m_fds.size();
    if (watch) {
      m_fds.push_back({m_opt.watch_fd, POLLIN, 0});
      m_index.push_back(0);
    }
    for (size_t i = 0; i < streams.size(); ++i) {
      if (m_tee.want_write(i)) {
        m_fds.push_back({streams[i].terminal, POLLOUT, 0});
        m_index.push_back(i);
      }
    }
    int n = ::poll(m_fds.data(), m_fds.size(), timeout_ms);
    if (n < 0) {
      GPUALERT_ASSERT(errno == EINTR);
      return false;
    }
    bool output = false;
    for (size_t k = 1; k < m_fds.size(); ++k) {
      if (m_fds[k].revents == 0) {
        continue;
      }
      if (k < first_terminal) {
        output = m_tee.copy_once(m_index[k - 1]) != 1 || output;
      } else if (extra && k == first_terminal) {
        m_opt.on_extra();
      } else if (watch && k == watch_at) {
        m_opt.on_watch_readable();
      } else {
        output = m_tee.flush_terminal(m_index[k - 1]) || output;
      }
    }
    if (m_fds[0].revents & POLLIN) {
      read_signals();
    }
    return output;
  }

  void read_signals() {
    m_batch.clear();
    signalfd_siginfo info{};
    while (util::read_retry(m_signals.fd(), &info, sizeof info) == sizeof info) {
      m_batch.push_back(info);
    }
    // The kernel hands pending signals over by number, not in the order they came:
    // SIGTERM (15) before SIGCONT (18). Slurm's step daemon sends SIGCONT first when
    // it ends a job, and Forwarding tells that SIGTERM by it: note SIGCONT first.
    std::stable_partition(m_batch.begin(), m_batch.end(),
                          [](const signalfd_siginfo& i) { return i.ssi_signo == SIGCONT; });
    const double now_s = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    for (const auto& i : m_batch) {
      if (i.ssi_signo == SIGCHLD) {
        reap();
        continue;
      }
      // Judged even after the job ended, so that Forwarding learns who ended it.
      if (m_forwarding.should_forward(i, now_s) && !m_status) {
        signal_job(static_cast<int>(i.ssi_signo));
      }
    }
  }

  void reap() {
    int status = 0;
    for (;;) {
      pid_t r = ::waitpid(m_child, &status, WNOHANG);
      if (r < 0 && errno == EINTR) {
        continue;
      }
      if (r == m_child) {
        m_status = ExitStatus::from_wait_status(status);
      }
      return;
    }
  }

  // After the child exited: take what is still in the pipes, but don't wait for
  // grandchildren that inherited them and keep running. Then give the terminals
  // what they were not shown yet, as long as they take it (a reader that stopped
  // reading does not hold the wrapper: what it did not take is counted).
  void drain() {
    auto hard_end = Clock::now() + m_opt.drain_max;
    auto quiet_since = Clock::now();
    while (!m_tee.all_eof() && Clock::now() < hard_end) {
      int timeout = static_cast<int>(m_opt.drain_idle.count());
      if (auto stall = m_tee.next_stall()) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*stall - Clock::now());
        timeout = static_cast<int>(std::clamp<int64_t>(ms.count() + 1, 0, timeout));
      }
      if (poll_streams(timeout)) {
        quiet_since = Clock::now();
      } else if (Clock::now() - quiet_since >= m_opt.drain_idle && !m_tee.next_stall()) {
        break;  // quiet: whatever holds the pipe is not the job any more
      }
    }
    // What the job left in a pipe that a slow terminal kept us from reading goes
    // to the log all the same (bounded: a grandchild may still be printing).
    for (size_t i = 0; i < m_tee.streams().size(); ++i) {
      for (int k = 0; k < 64 && m_tee.copy_once(i, /*force=*/true) > 1; ++k) {
      }
    }
    auto last_progress = Clock::now();
    const auto terminal_end = last_progress + m_opt.terminal_max;
    while (terminal_waiting() && Clock::now() < terminal_end &&
           Clock::now() - last_progress < m_opt.drain_idle) {
      if (poll_streams(static_cast<int>(m_opt.drain_idle.count()), /*pipes=*/false)) {
        last_progress = Clock::now();
      }
    }
  }

  bool terminal_waiting() const {
    for (size_t i = 0; i < m_tee.streams().size(); ++i) {
      if (m_tee.want_write(i)) {
        return true;
      }
    }
    return false;
  }

  pid_t m_child;
  const SignalIntake& m_signals;
  capture::Tee& m_tee;
  const SuperviseOptions& m_opt;
  Forwarding m_forwarding;
  Clock::time_point m_start;
  std::optional<Clock::time_point> m_term_at, m_kill_at;
  std::optional<Clock::time_point> m_helpers_at;  // until start_helpers() ran
  std::optional<Clock::time_point> m_keep_at;     // when keep_notice() is due
  bool m_kept = false;
  Clock::time_point m_last_output;  // of the job's last byte (the start before any)
  uint64_t m_copied_seen = 0;
  std::optional<double> m_stalled_at, m_resumed_at;
  bool m_stall_killed = false;
  std::string m_kill_reason = "time limit";  // which deadline sent the SIGTERM
  bool m_term_sent = false, m_kill_sent = false, m_timed_out = false;
  std::optional<ExitStatus> m_status;
  std::vector<std::string> m_events;
  std::vector<pollfd> m_fds;
  std::vector<size_t> m_index;
  std::vector<signalfd_siginfo> m_batch;
};

}  // namespace

SuperviseResult supervise(pid_t child, const SignalIntake& signals, capture::Tee& tee,
                          const SuperviseOptions& options) {
  return Loop(child, signals, tee, options).run();
}

}  // namespace supervise
