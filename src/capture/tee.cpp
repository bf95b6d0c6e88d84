#include "capture/tee.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace capture {

namespace {
constexpr size_t k_chunk = 256 * 1024;
// Bigger pipes mean fewer wake-ups when the job prints fast (Linux allows 1 MiB unprivileged).
constexpr int k_pipe_size = 1 << 20;
}  // namespace

// Not zero-filled: a job that prints little touches a page or two of it.
Tee::Tee(LogSink& log) : m_log(log), m_buf(std::make_unique_for_overwrite<char[]>(k_chunk)) {}

size_t Tee::add(util::UniqueFd pipe, int terminal) {
  ::fcntl(pipe.get(), F_SETPIPE_SZ, k_pipe_size);
  ::fcntl(pipe.get(), F_SETFL, ::fcntl(pipe.get(), F_GETFL) | O_NONBLOCK);
  m_streams.push_back(Stream{std::move(pipe), terminal, terminal >= 0, false});
  return m_streams.size() - 1;
}

bool Tee::all_eof() const {
  for (const auto& s : m_streams) {
    if (!s.eof) {
      return false;
    }
  }
  return true;
}

void Tee::write_terminal(Stream& s, const char* data, size_t len) {
  while (len > 0 && s.terminal_ok) {
    ssize_t n = ::write(s.terminal, data, len);
    if (n > 0) {
      data += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      // Our stdout was left non-blocking by whoever opened it: wait, don't spin.
      struct pollfd p {
        s.terminal, POLLOUT, 0
      };
      ::poll(&p, 1, 1000);
      continue;
    }
    s.terminal_ok = false;
    if (n < 0 && errno != EPIPE) {
      m_notes.push_back(std::string("copying to the terminal stopped: ") + std::strerror(errno));
    }
  }
}

size_t Tee::copy_once(size_t i) {
  Stream& s = m_streams[i];
  if (s.eof) {
    return 0;
  }
  ssize_t n = util::read_retry(s.pipe.get(), m_buf.get(), k_chunk);
  if (n < 0 && errno == EAGAIN) {
    return 1;  // spurious wake-up; not EOF
  }
  if (n <= 0) {
    s.eof = true;
    s.pipe.reset();
    return 0;
  }
  auto len = static_cast<size_t>(n);
  m_copied += len;
  m_log.append(std::string_view(m_buf.get(), len));
  write_terminal(s, m_buf.get(), len);
  if (!s.terminal_ok && s.terminal >= 0) {
    // The reader of our output went away: let the job see its broken pipe, as it
    // would have without the wrapper, instead of running on unseen.
    s.eof = true;
    s.pipe.reset();
  }
  return len;
}

}  // namespace capture
