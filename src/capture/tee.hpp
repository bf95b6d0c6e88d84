// capture/tee.hpp: copies the job's output pipes to the terminal and to the durable log.
//
// Driven by the supervisor's poll loop: when a pipe is readable, copy_once()
// moves one chunk (up to 256 KiB) to its terminal fd and to the log, in that
// order of arrival, so the log interleaves stdout and stderr as they came.
// Memory is bounded by the chunk size whatever the job prints (a 2 GB line
// without a newline streams through). If the terminal side is gone (EPIPE:
// `gpualert run ... | head`), that pipe is closed so the job sees the broken
// pipe it would have seen without the wrapper.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture/log_sink.hpp"
#include "util/fd.hpp"

namespace capture {

struct Stream {
  util::UniqueFd pipe;  // read end of the job's stdout or stderr
  int terminal = -1;    // our own stdout or stderr
  bool terminal_ok = true;
  bool eof = false;
};

class Tee {
 public:
  explicit Tee(LogSink& log);
  // Returns the index of the stream.
  size_t add(util::UniqueFd pipe, int terminal);
  // Reads one chunk from stream i. Returns bytes copied, 0 at EOF (stream closed).
  size_t copy_once(size_t i);
  std::vector<Stream>& streams() { return m_streams; }
  bool all_eof() const;
  // Bytes read from the job's pipes so far.
  uint64_t copied() const { return m_copied; }
  // Terminal write failures other than EPIPE, for the report.
  const std::vector<std::string>& notes() const { return m_notes; }

 private:
  void write_terminal(Stream& s, const char* data, size_t len);
  LogSink& m_log;
  std::vector<Stream> m_streams;
  std::unique_ptr<char[]> m_buf;
  std::vector<std::string> m_notes;
  uint64_t m_copied = 0;
};

}  // namespace capture
