#include "capture/log_follower.hpp"

#include <fcntl.h>
#include <vector>

#include "util/fd.hpp"

namespace capture {

LogFollower::LogFollower(const LogSink& sink, Consumer consumer)
    : m_sink(sink), m_consumer(std::move(consumer)) {
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
  util::UniqueFd fd(::open(m_sink.path().c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return;
  }
  std::vector<char> buf(1 << 20);
  uint64_t offset = 0;
  for (;;) {
    // Read m_done before written(): once done is seen, written() is final.
    bool done = m_done.load();
    uint64_t end = m_sink.written();
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

}  // namespace capture
