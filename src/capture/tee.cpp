#include "capture/tee.hpp"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace capture {

namespace {
constexpr size_t k_chunk = 256 * 1024;
// Bigger pipes mean fewer wake-ups when the job prints fast (Linux allows 1 MiB unprivileged).
constexpr int k_pipe_size = 1 << 20;
}  // namespace

bool same_destination(int a, int b) {
  struct stat sa {
  }, sb{};
  if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) {
    return false;
  }
  if (sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino) {
    return false;
  }
  if (!S_ISREG(sa.st_mode)) {
    return true;  // the same terminal, pipe or FIFO: one place, one order
  }
  // A regular file opened twice without O_APPEND (`> f 2> f`) has two offsets that
  // overwrite each other; one description (`2>&1`) or two appending ones (`>> f 2>> f`)
  // are one stream, in the order written.
  if ((::fcntl(a, F_GETFL) & O_APPEND) != 0 && (::fcntl(b, F_GETFL) & O_APPEND) != 0) {
    return true;
  }
  // Without kcmp (a kernel built without it), one pipe as well: all of it then goes
  // to our stdout's description, which loses nothing even for `> f 2> f`.
  const pid_t self = ::getpid();
  return ::syscall(SYS_kcmp, self, self, KCMP_FILE, a, b) <= 0;
}

Tee::Tee(LogSink& log, OutputFeed* feed, std::chrono::milliseconds stall)
    : m_log(log), m_feed(feed), m_stall(stall) {}

bool Tee::stalled(const Stream& s, Clock::time_point now) const {
  return now - s.progress >= m_stall;
}

bool Tee::want_read(size_t i, Clock::time_point now) const {
  const Stream& s = m_streams[i];
  if (s.eof) {
    return false;
  }
  return !s.terminal_ok || s.pending < k_terminal_buffer || stalled(s, now);
}

std::optional<Tee::Clock::time_point> Tee::next_stall() const {
  std::optional<Clock::time_point> next;
  const auto now = Clock::now();
  for (const auto& s : m_streams) {
    if (!s.eof && s.terminal_ok && s.pending >= k_terminal_buffer) {
      auto at = s.progress + m_stall;
      if (at > now && (!next || at < *next)) {
        next = at;
      }
    }
  }
  return next;
}

size_t Tee::add(util::UniqueFd pipe, int terminal) {
  ::fcntl(pipe.get(), F_SETPIPE_SZ, k_pipe_size);
  ::fcntl(pipe.get(), F_SETFL, ::fcntl(pipe.get(), F_GETFL) | O_NONBLOCK);
  Stream s;
  s.pipe = std::move(pipe);
  s.origin = terminal;
  s.terminal = terminal;
  struct stat st {};
  if (terminal < 0 || ::fstat(terminal, &st) != 0) {
    s.terminal_ok = false;  // closed stdout: the log still gets everything
  } else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    s.mode = TermMode::direct;
  } else if (S_ISSOCK(st.st_mode)) {
    s.mode = TermMode::socket;
  } else if ((::fcntl(terminal, F_GETFL) & O_NONBLOCK) != 0) {
    s.mode = TermMode::nonblock;
  } else {
    // A description of our own, so that O_NONBLOCK is not imposed on the shell
    // and the other processes that share our stdout (nor left behind if we die).
    std::string path = "/proc/self/fd/" + std::to_string(terminal);
    s.reopened.reset(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (s.reopened.valid()) {
      s.terminal = s.reopened.get();
      s.mode = TermMode::nonblock;
    } else {
      s.mode = TermMode::careful;
    }
  }
  m_streams.push_back(std::move(s));
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

bool Tee::want_write(size_t i) const {
  const Stream& s = m_streams[i];
  return s.terminal_ok && s.pending > 0;
}

uint64_t Tee::unshown() const {
  uint64_t n = 0;
  for (const auto& s : m_streams) {
    n += s.unshown + s.pending;
  }
  return n;
}

void Tee::terminal_failed(Stream& s, int err) {
  s.terminal_ok = false;
  s.pending = 0;
  if (err != EPIPE) {
    m_notes.push_back(std::string("copying to the terminal stopped: ") + std::strerror(err));
  }
  if (s.pipe.valid()) {
    // The reader of our output went away: let the job see its broken pipe, as it
    // would have without the wrapper, instead of running on unseen.
    s.eof = true;
    s.pipe.reset();
  }
}

size_t Tee::write_now(Stream& s, const char* data, size_t len) {
  size_t done = 0;
  while (done < len && s.terminal_ok) {
    size_t want = len - done;
    ssize_t n;
    if (s.mode == TermMode::socket) {
      n = ::send(s.terminal, data + done, want, MSG_DONTWAIT | MSG_NOSIGNAL);
    } else if (s.mode == TermMode::careful) {
      struct pollfd p {
        s.terminal, POLLOUT, 0
      };
      if (::poll(&p, 1, 0) != 1 || (p.revents & POLLOUT) == 0) {
        if (p.revents & (POLLERR | POLLHUP)) {
          terminal_failed(s, EPIPE);
        }
        return done;
      }
      n = ::write(s.terminal, data + done, std::min<size_t>(want, PIPE_BUF));
    } else {
      n = ::write(s.terminal, data + done, want);
    }
    if (n > 0) {
      done += static_cast<size_t>(n);
      s.progress = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return done;
    }
    terminal_failed(s, n < 0 ? errno : EIO);
  }
  return done;
}

bool Tee::flush_terminal(size_t i) {
  Stream& s = m_streams[i];
  bool wrote = false;
  while (s.terminal_ok && s.pending > 0) {
    size_t piece = std::min(s.pending, k_terminal_buffer - s.head);
    size_t n = write_now(s, s.ring.get() + s.head, piece);
    wrote = wrote || n > 0;
    s.head = (s.head + n) % k_terminal_buffer;
    s.pending -= n;
    if (n < piece) {
      break;
    }
  }
  return wrote;
}

size_t Tee::copy_once(size_t i, bool force) {
  Stream& s = m_streams[i];
  if (s.eof) {
    return 0;
  }
  // While the terminal takes what it is given, no more is read than its ring holds:
  // a slow reader slows the job, as without the wrapper, and sees every byte.
  size_t want = k_chunk;
  if (!force && s.terminal_ok && s.pending > 0 && !stalled(s, Clock::now())) {
    want = std::min(k_chunk, k_terminal_buffer - s.pending);
    if (want == 0) {
      return 1;  // not EOF: the loop polls this pipe again once the terminal took some
    }
  }
  // Read straight into diagnosis's ring when there is one: the bytes are then copied
  // only by the kernel (into the log's page cache, and to the terminal).
  char* into = nullptr;
  if (m_feed != nullptr) {
    auto space = m_feed->reserve(want);
    into = space.data();
    want = space.size();
  } else {
    if (!m_buf) {
      // Not zero-filled: a job that prints little touches a page or two of it.
      m_buf = std::make_unique_for_overwrite<char[]>(k_chunk);
    }
    into = m_buf.get();
  }
  ssize_t n = util::read_retry(s.pipe.get(), into, want);
  if (m_feed != nullptr) {
    m_feed->commit(n > 0 ? static_cast<size_t>(n) : 0);
  }
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
  const std::string_view chunk(into, len);
  m_log.append(chunk);
  if (!s.terminal_ok) {
    return len;
  }
  size_t shown = s.pending == 0 ? write_now(s, chunk.data(), len) : 0;
  if (shown < len && s.terminal_ok) {
    if (!s.ring) {
      s.ring = std::make_unique_for_overwrite<char[]>(k_terminal_buffer);
    }
    if (s.pending == 0) {
      s.progress = Clock::now();  // the stall clock starts when the terminal first refuses
    }
    size_t keep = std::min(k_terminal_buffer - s.pending, len - shown);
    size_t tail = (s.head + s.pending) % k_terminal_buffer;
    size_t first = std::min(keep, k_terminal_buffer - tail);
    std::memcpy(s.ring.get() + tail, chunk.data() + shown, first);
    std::memcpy(s.ring.get(), chunk.data() + shown + first, keep - first);
    s.pending += keep;
    s.unshown += len - shown - keep;
  }
  return len;
}

}  // namespace capture
