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
// and writing is retried on the next append. A failing fdatasync or close (EIO,
// a quota met at writeback) breaks the durability promise too: the first one is
// kept for the report (sync_error()).
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

#include "util/fd.hpp"

namespace capture {

class LogSink {
 public:
  // start_offset: what the file holds already (the header), which the sink appends after.
  LogSink(util::UniqueFd fd, std::string path, uint64_t start_offset,
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
  // thread was never started), then closes the file. Idempotent.
  void close();

  uint64_t job_bytes() const { return m_job_bytes; }
  uint64_t written() const { return m_written.load(std::memory_order_acquire); }
  uint64_t lost_bytes() const { return m_lost; }
  const std::optional<std::string>& first_error() const { return m_first_error; }
  // The first failed fdatasync or close: what was written may not be on disk.
  // Complete after close().
  std::optional<std::string> sync_error() const;
  const std::string& path() const { return m_path; }

  // True once finish_writing() or close() began: no byte will be appended any more.
  bool closed() const;

 private:
  void sync_loop();
  void write_out(std::string_view bytes, bool job);
  // fdatasync, keeping the first failure.
  void sync_now();
  // The sync at close: fdatasync if the job printed since the last one, else none.
  void last_sync();
  util::UniqueFd m_fd;
  std::string m_path;
  std::atomic<uint64_t> m_written;
  uint64_t m_job_bytes = 0;
  uint64_t m_lost = 0;
  bool m_at_line_start = true;
  std::optional<std::string> m_first_error;
  std::optional<std::string> m_sync_error;  // guarded by m_mutex
  std::chrono::milliseconds m_interval;
  mutable std::mutex m_mutex;
  std::condition_variable m_sync_cv;       // the sync thread waits here
  uint64_t m_next_writeback = UINT64_MAX;  // wake the sync thread when written() reaches it
  bool m_stop = false;
  bool m_dirty = false;         // written since the last fdatasync
  bool m_job_unsynced = false;  // the job's bytes among them
  bool m_closed = false;        // close() ran; the appending thread only
  std::thread m_sync_thread;
};

}  // namespace capture
