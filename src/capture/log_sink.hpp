// capture/log_sink.hpp: the durable log, written on the copy path and synced beside it.
//
// append() is called from the copy loop only; it never blocks on fsync. Once
// start_syncing() was called, a background thread fdatasyncs the file every sync
// interval and once at close, so what the job printed is on disk within that
// bound even if the wrapper is SIGKILLed. A short job's sink never starts it:
// close() makes the last sync itself. The last sync waits for the disk only when
// the job printed since the one before; the wrapper's own end lines alone (which
// report.json holds too) are left to the kernel's writeback. A failing write (a
// full disk) never stops the copy to the terminal: it is counted and reported once,
// and writing is retried on the next append. written() is published for readers
// that follow the log (the online classifier), with line marks: every MiB or so,
// where a line ended and how many lines came before it, so that a reader far
// behind can jump ahead without reading (and counting) what it skips.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "util/fd.hpp"

namespace capture {

// A place in the log where a line ends: `offset` is just after its '\n', and
// `lines` the number of '\n' in [0, offset).
struct LineMark {
  uint64_t offset = 0;
  uint64_t lines = 0;
};

class LogSink {
 public:
  // start: what the file holds already (the header), which the sink appends after.
  LogSink(util::UniqueFd fd, std::string path, LineMark start,
          std::chrono::milliseconds sync_interval);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // Starts the sync thread (from the thread that appends; idempotent, and a no-op
  // once closing began). Before it, nothing is synced until close().
  void start_syncing();
  void append(std::string_view bytes);
  // Appends wrapper lines (already marked), starting on a fresh line.
  void append_wrapper_lines(std::string_view lines);
  // No more appends: the sync thread makes its last fdatasync and ends, while
  // the caller goes on (diagnosis, the report). Idempotent.
  void finish_writing();
  // finish_writing(), then waits for that last sync (or makes it, when the sync
  // thread was never started). Idempotent.
  void close();

  uint64_t job_bytes() const { return m_job_bytes; }
  uint64_t written() const { return m_written.load(std::memory_order_acquire); }
  uint64_t lost_bytes() const { return m_lost; }
  const std::optional<std::string>& first_error() const { return m_first_error; }
  const std::string& path() const { return m_path; }

  // The last line mark at or before `offset` (marks are about k_mark_spacing
  // apart, the most recent k_marks kept), or nothing.
  std::optional<LineMark> line_mark_before(uint64_t offset) const;
  // The first kept line mark after `offset`, or nothing.
  std::optional<LineMark> line_mark_after(uint64_t offset) const;
  // Where the last '\n' written so far ends (the start mark before any): no byte
  // after it is a line break.
  LineMark last_line_end() const;
  static constexpr uint64_t k_mark_spacing = 1u << 20;
  static constexpr size_t k_marks = 64;

  // True once finish_writing() or close() began: no byte will be appended any more.
  bool closed() const;
  // Wakes followers (see LogFollower) when new bytes are written.
  void wait_for_more(uint64_t seen, std::chrono::milliseconds max_wait) const;
  // Sleeps until finish_writing() or max_wait, without being woken by appends.
  void wait_for_close(std::chrono::milliseconds max_wait) const;

 private:
  void sync_loop();
  void write_out(std::string_view bytes, bool job);
  // The sync at close: fdatasync if the job printed since the last one, else none.
  void last_sync();
  void note_lines(std::string_view written_bytes);
  util::UniqueFd m_fd;
  std::string m_path;
  std::atomic<uint64_t> m_written;
  uint64_t m_job_bytes = 0;
  uint64_t m_lost = 0;
  bool m_at_line_start = true;
  LineMark m_last_line_end;       // copy thread only
  uint64_t m_lines = 0;           // '\n' written so far; copy thread only
  std::vector<LineMark> m_marks;  // ring, guarded by m_mutex
  LineMark m_published_line_end;  // m_last_line_end for readers, guarded by m_mutex
  size_t m_next_mark = 0;
  std::optional<std::string> m_first_error;
  std::chrono::milliseconds m_interval;
  mutable std::mutex m_mutex;
  mutable std::condition_variable m_sync_cv;     // the sync thread waits here
  mutable std::condition_variable m_readers_cv;  // followers wait here
  mutable int m_readers_waiting = 0;
  uint64_t m_next_writeback = UINT64_MAX;  // wake the sync thread when written() reaches it
  bool m_stop = false;
  bool m_dirty = false;         // written since the last fdatasync
  bool m_job_unsynced = false;  // the job's bytes among them
  bool m_closed = false;        // close() ran; the appending thread only
  std::thread m_sync_thread;
};

}  // namespace capture
