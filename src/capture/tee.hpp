// capture/tee.hpp: copies the job's output pipes to the durable log, to diagnosis
// and to the terminal.
//
// Driven by the supervisor's poll loop: when a pipe is readable, copy_once()
// moves one chunk (up to 256 KiB) to the log, then to diagnosis (an OutputFeed,
// in memory), then towards its terminal fd. Memory is bounded by the chunk size
// whatever the job prints (a 2 GB line without a newline streams through).
//
// A stalled terminal never holds the log back: terminal writes don't block (a
// pipe, FIFO or tty is reopened non-blocking through /proc/self/fd, a socket gets
// MSG_DONTWAIT), and what the terminal can't take yet waits in a bounded ring per
// stream that the loop flushes when the fd is writable (want_write() and
// flush_terminal()). While the ring is full, the job's pipe is not read (the job
// waits for a slow reader as it would without the wrapper: nothing is lost),
// unless the terminal took nothing for `stall` (a reader that stopped reading):
// then the job's output goes on to the log and diagnosis, and what the terminal
// can't take is not shown and counted (unshown()).
// A regular file is written directly: the disk does not stall like a reader.
// If the terminal side is gone (EPIPE: `gpualert run ... | head`), that pipe is
// closed so the job sees the broken pipe it would have seen without the wrapper.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/feed.hpp"
#include "capture/log_sink.hpp"
#include "util/fd.hpp"

namespace capture {

// How the terminal side of a stream is written without blocking.
enum class TermMode {
  direct,    // a regular file or block device: plain writes
  nonblock,  // an fd of our own (reopened) or one already non-blocking
  socket,    // send(MSG_DONTWAIT)
  careful,   // could not be made non-blocking: write PIPE_BUF at a time, when poll says so
};

struct Stream {
  util::UniqueFd pipe;  // read end of the job's stdout or stderr (or both)
  int terminal = -1;    // our own stdout or stderr (or an fd reopened from it)
  util::UniqueFd reopened;
  TermMode mode = TermMode::direct;
  bool terminal_ok = true;
  bool eof = false;
  // Accepted for the terminal, not written yet: a ring of Tee::k_terminal_buffer
  // bytes, allocated at the first stall (a fixed block: no reallocation that would
  // leave the heap larger than the bound).
  std::unique_ptr<char[]> ring;
  size_t head = 0, pending = 0;
  uint64_t unshown = 0;  // dropped because the ring was full
  // When the terminal last took bytes, or its ring began to fill.
  std::chrono::steady_clock::time_point progress;
  int origin = -1;  // the fd the terminal side came from (1 or 2)
};

// Whether fds a and b are the same open file (`> out 2>&1`, or both the same
// terminal), so that one pipe keeps the job's stdout and stderr in the order
// written: same device and inode, and for a regular file also the same open file
// description (kcmp, when the kernel has it) or both appending.
bool same_destination(int a, int b);

class Tee {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t k_terminal_buffer = 512u << 10;
  explicit Tee(LogSink& log, OutputFeed* feed = nullptr,
               std::chrono::milliseconds stall = std::chrono::milliseconds(1000));
  // Returns the index of the stream.
  size_t add(util::UniqueFd pipe, int terminal);
  // Whether the loop should read stream i's pipe now: not while its terminal's
  // ring is full, unless the terminal stalled.
  bool want_read(size_t i, Clock::time_point now) const;
  // When a stream not read now (its ring full, its terminal not stalled yet) will
  // count as stalled, if any.
  std::optional<Clock::time_point> next_stall() const;
  // Reads one chunk from stream i. Returns bytes copied, 0 at EOF (stream closed),
  // 1 when there was nothing to read (or no room: see want_read). force: read even
  // when the terminal's ring is full (what does not fit is not shown).
  size_t copy_once(size_t i, bool force = false);
  std::vector<Stream>& streams() { return m_streams; }
  const std::vector<Stream>& streams() const { return m_streams; }
  bool all_eof() const;
  // Whether stream i has bytes waiting for its terminal (poll its fd for POLLOUT).
  bool want_write(size_t i) const;
  // Writes what stream i's terminal takes now; returns whether anything was written.
  bool flush_terminal(size_t i);
  // Bytes read from the job's pipes so far.
  uint64_t copied() const { return m_copied; }
  // Bytes not shown on the terminal: dropped while its buffer was full, plus what
  // is still pending (call after the last flush).
  uint64_t unshown() const;
  // Terminal write failures other than EPIPE, for the report.
  const std::vector<std::string>& notes() const { return m_notes; }

 private:
  // Writes as much of data as the terminal takes now; returns bytes written.
  size_t write_now(Stream& s, const char* data, size_t len);
  void terminal_failed(Stream& s, int err);
  bool stalled(const Stream& s, Clock::time_point now) const;
  LogSink& m_log;
  OutputFeed* m_feed;
  std::chrono::milliseconds m_stall;
  std::vector<Stream> m_streams;
  std::unique_ptr<char[]> m_buf;
  std::vector<std::string> m_notes;
  uint64_t m_copied = 0;
};

}  // namespace capture
