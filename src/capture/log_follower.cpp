#include "capture/log_follower.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>

#include "util/count.hpp"
#include "util/fd.hpp"

namespace capture {

LogFollower::LogFollower(const LogSink& sink, Consumer consumer, Skipper skipper, Starter starter,
                         FollowerLimits limits)
    : m_sink(sink),
      m_consumer(std::move(consumer)),
      m_skipper(std::move(skipper)),
      m_starter(std::move(starter)),
      m_limits(limits) {}

void LogFollower::start() {
  if (m_thread.joinable() || m_finished || m_done.load()) {
    return;
  }
  m_started = true;
  m_thread = std::thread([this] { loop(); });
}

LogFollower::~LogFollower() { finish(); }

void LogFollower::finish() {
  m_done.store(true);
  if (m_thread.joinable()) {
    m_thread.join();
  }
  if (m_finished) {
    return;
  }
  m_finished = true;
  if (!m_started && m_starter) {
    m_starter();  // never started (a short job): what the thread would have run first
  }
  // The rest is read here, at the caller's priority: the caller waits for it, and
  // an idle-priority thread can be kept off the CPU by anything else runnable.
  if (!m_fd.valid()) {
    m_fd.reset(::open(m_sink.path().c_str(), O_RDONLY | O_CLOEXEC));
    if (!m_fd.valid()) {
      return;
    }
  }
  uint64_t end = m_sink.written();
  if (m_skipper && end - m_offset > m_limits.max_catch_up) {
    skip_backlog(end);
  }
  while (m_offset < end && read_chunk(end)) {
  }
}

bool LogFollower::read_chunk(uint64_t end) {
  if (!m_buf) {
    // Not zero-filled: a short job touches one page of it, not 256.
    m_buf = std::make_unique_for_overwrite<char[]>(k_buf_size);
  }
  size_t want = static_cast<size_t>(std::min<uint64_t>(k_buf_size, end - m_offset));
  ssize_t n = ::pread(m_fd.get(), m_buf.get(), want, static_cast<off_t>(m_offset));
  if (n <= 0) {
    return false;
  }
  std::string_view chunk(m_buf.get(), static_cast<size_t>(n));
  m_lines += util::count_newlines(chunk);
  m_consumer(chunk);
  m_offset += static_cast<uint64_t>(n);
  m_consumed.store(m_offset);
  return true;
}

void LogFollower::loop() {
  if (m_starter) {
    m_starter();
  }
  if (m_done.load()) {
    return;  // a short job: finish() reads it all
  }
  m_fd.reset(::open(m_sink.path().c_str(), O_RDONLY | O_CLOEXEC));
  if (!m_fd.valid()) {
    return;
  }
  // The job's output rate, measured while far behind over at least k_min_window;
  // while deferring, the follower sleeps k_window at a time.
  constexpr auto k_min_window = std::chrono::milliseconds(10);
  constexpr auto k_window = std::chrono::milliseconds(100);
  auto window_start = std::chrono::steady_clock::now();
  uint64_t window_written = m_sink.written();
  bool deferring = false;
  // Stops as soon as the sink has its last byte (checked before every chunk, so
  // that the end is seen at once however far behind): finish() does the rest.
  bool idle = false;
  while (!m_done.load() && !m_sink.closed()) {
    uint64_t end = m_sink.written();
    if (!idle && end - m_offset > m_limits.idle_backlog) {
      // The job prints in bulk: reading back is never worth slowing it or the copy
      // for, so from now on the follower only gets the CPU nobody else wants. Not
      // before: a short job's first lines (and the databases they load) are read at
      // normal priority, because the wrapper's exit waits for them, and an idle thread
      // can starve for seconds on a busy node (unprivileged, it can't come back).
      struct sched_param param {};
      ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &param);
      idle = true;
    }
    if (end - m_offset > m_limits.defer_backlog) {
      auto now = std::chrono::steady_clock::now();
      if (now - window_start >= k_min_window) {
        double seconds = std::chrono::duration<double>(now - window_start).count();
        deferring = static_cast<double>(end - window_written) >
                    static_cast<double>(m_limits.defer_rate) * seconds;
        window_start = now;
        window_written = end;
        if (deferring) {
          m_deferred.store(true);
        }
      }
      if (deferring) {
        m_sink.wait_for_close(k_window);
        continue;
      }
    } else {
      deferring = false;
    }
    if (m_offset < end) {
      if (!read_chunk(end)) {
        return;
      }
      continue;
    }
    m_sink.wait_for_more(m_offset, std::chrono::milliseconds(200));
  }
}

void LogFollower::skip_backlog(uint64_t end) {
  const uint64_t cut = end - m_limits.max_catch_up;
  // Every jump lands where the sink knows how many lines came before, so nothing
  // is read to count them. Best: a line mark just before the cut, onto a line start.
  if (auto mark = m_sink.line_mark_before(cut);
      mark && mark->offset > m_offset && cut - mark->offset <= 2 * LogSink::k_mark_spacing) {
    jump_to(*mark);
    return;
  }
  // No mark near: a long line runs into the cut. If a line ends after the cut, jump
  // to the first place known where one does (less than the catch-up is left).
  const LineMark last = m_sink.last_line_end();
  if (last.offset > cut) {
    auto after = m_sink.line_mark_after(cut);
    jump_to(after && after->offset < last.offset ? *after : last);
    return;
  }
  // None does: the log ends in one line longer than the catch-up (a multi-GB line
  // without a newline). Jump into it; every '\n' before the cut is counted in `last`.
  skipped(cut - m_offset, last.lines - m_lines);
  m_lines = last.lines;
  m_offset = cut;
}

void LogFollower::jump_to(const LineMark& mark) {
  skipped(mark.offset - m_offset, mark.lines - m_lines);
  m_offset = mark.offset;
  m_lines = mark.lines;
}

void LogFollower::skipped(uint64_t bytes, uint64_t newlines) {
  m_skipper(bytes, newlines);
  m_skipped.fetch_add(bytes);
}

}  // namespace capture
