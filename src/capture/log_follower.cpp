#include "capture/log_follower.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "util/count.hpp"
#include "util/fd.hpp"

namespace capture {

LogFollower::LogFollower(const LogSink& sink, Consumer consumer, Skipper skipper, Starter starter,
                         Limits limits)
    : m_sink(sink),
      m_consumer(std::move(consumer)),
      m_skipper(std::move(skipper)),
      m_starter(std::move(starter)),
      m_limits(limits) {
  m_thread = std::thread([this] { loop(); });
}

LogFollower::~LogFollower() { finish(); }

void LogFollower::finish() {
  m_done.store(true);
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

void LogFollower::loop() {
  if (m_starter) {
    m_starter();
  }
  // Reading back is never worth slowing the job or the copy for: on a busy machine
  // the follower only gets the CPU that nobody else wants (it catches up at the end).
  struct sched_param idle {};
  ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &idle);
  util::UniqueFd fd(::open(m_sink.path().c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return;
  }
  std::vector<char> buf(1 << 20);
  uint64_t offset = 0;
  uint64_t lines = 0;  // '\n' in [0, offset)
  // The job's output rate, measured while far behind over at least k_min_window;
  // while deferring, the follower sleeps k_window at a time.
  constexpr auto k_min_window = std::chrono::milliseconds(10);
  constexpr auto k_window = std::chrono::milliseconds(100);
  auto window_start = std::chrono::steady_clock::now();
  uint64_t window_written = m_sink.written();
  bool deferring = false;
  for (;;) {
    // Read done before written(): once the sink is closed (or finish() was
    // called after it), written() is final, and there is nothing to wait for.
    // Checked before every chunk, so that the end of the job is seen at once
    // even when the follower is far behind.
    bool done = m_done.load() || m_sink.closed();
    uint64_t end = m_sink.written();
    if (done && m_skipper && end - offset > m_limits.max_catch_up) {
      skip_backlog(fd.get(), offset, lines, end);
    }
    if (!done && end - offset > m_limits.defer_backlog) {
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
    if (offset < end) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - offset));
      ssize_t n = ::pread(fd.get(), buf.data(), want, static_cast<off_t>(offset));
      if (n <= 0) {
        return;
      }
      std::string_view chunk(buf.data(), static_cast<size_t>(n));
      lines += util::count_newlines(chunk);
      m_consumer(chunk);
      offset += static_cast<uint64_t>(n);
      m_consumed.store(offset);
      continue;
    }
    if (done) {
      return;
    }
    m_sink.wait_for_more(offset, std::chrono::milliseconds(200));
  }
}

void LogFollower::skip_backlog(int fd, uint64_t& offset, uint64_t& lines, uint64_t end) {
  uint64_t cut = end - m_limits.max_catch_up;
  // The sink's line marks say where a line ended and how many came before: jump
  // there without reading what lies between.
  if (auto mark = m_sink.line_mark_before(cut); mark && mark->offset > offset) {
    skipped(mark->offset - offset, mark->lines - lines);
    offset = mark->offset;
    lines = mark->lines;
    return;
  }
  // No mark in reach (very long lines): read up to the first '\n' past the cut.
  std::vector<char> buf(1 << 20);
  uint64_t newlines = 0;
  uint64_t pos = offset;
  while (pos < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - pos));
    ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(pos));
    if (n <= 0) {
      return;  // can't read: scan on from where we were
    }
    const char* p = buf.data();
    const char* stop = p + n;
    while (const void* nl = std::memchr(p, '\n', static_cast<size_t>(stop - p))) {
      p = static_cast<const char*>(nl) + 1;
      ++newlines;
      uint64_t after = pos + static_cast<uint64_t>(p - buf.data());
      if (after > cut) {
        skipped(after - offset, newlines);
        offset = after;
        lines += newlines;
        return;
      }
    }
    pos += static_cast<uint64_t>(n);
  }
  // No line break after the cut: read it all.
}

void LogFollower::skipped(uint64_t bytes, uint64_t newlines) {
  m_skipper(bytes, newlines);
  m_skipped.fetch_add(bytes);
}

}  // namespace capture
