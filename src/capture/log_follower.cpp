#include "capture/log_follower.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "util/fd.hpp"

namespace capture {

LogFollower::LogFollower(const LogSink& sink, Consumer consumer, Skipper skipper, Starter starter,
                         uint64_t max_catch_up)
    : m_sink(sink),
      m_consumer(std::move(consumer)),
      m_skipper(std::move(skipper)),
      m_starter(std::move(starter)),
      m_max_catch_up(max_catch_up) {
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
  for (;;) {
    // Read done before written(): once the sink is closed (or finish() was
    // called after it), written() is final, and there is nothing to wait for.
    bool done = m_done.load() || m_sink.closed();
    uint64_t end = m_sink.written();
    if (done && m_skipper && end - offset > m_max_catch_up) {
      offset = skip_backlog(fd.get(), offset, end);
    }
    while (offset < end) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - offset));
      ssize_t n = ::pread(fd.get(), buf.data(), want, static_cast<off_t>(offset));
      if (n <= 0) {
        return;
      }
      m_consumer(std::string_view(buf.data(), static_cast<size_t>(n)));
      offset += static_cast<uint64_t>(n);
      m_consumed.store(offset);
    }
    if (done) {
      return;
    }
    m_sink.wait_for_more(offset, std::chrono::milliseconds(200));
  }
}

uint64_t LogFollower::skip_backlog(int fd, uint64_t offset, uint64_t end) {
  std::vector<char> buf(1 << 20);
  uint64_t cut = end - m_max_catch_up;
  uint64_t newlines = 0;
  uint64_t pos = offset;
  while (pos < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - pos));
    ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(pos));
    if (n <= 0) {
      return offset;  // can't read: scan on from where we were
    }
    const char* p = buf.data();
    const char* stop = p + n;
    while (const void* nl = std::memchr(p, '\n', static_cast<size_t>(stop - p))) {
      p = static_cast<const char*>(nl) + 1;
      ++newlines;
      if (pos + static_cast<uint64_t>(p - buf.data()) > cut) {
        uint64_t new_offset = pos + static_cast<uint64_t>(p - buf.data());
        m_skipper(new_offset - offset, newlines);
        m_skipped.store(new_offset - offset);
        return new_offset;
      }
    }
    pos += static_cast<uint64_t>(n);
  }
  return offset;  // no line break after the cut: read it all
}

}  // namespace capture
