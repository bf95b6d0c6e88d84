// capture/log_sink.hpp: the durable log, written on the copy path and synced beside it.
//
// append() is called from the copy loop only; it never blocks on fsync. A
// background thread fdatasyncs the file every sync interval and once at close,
// so what the job printed is on disk within that bound even if the wrapper is
// SIGKILLed. A failing write (a full disk) never stops the copy to the terminal:
// it is counted and reported once, and writing is retried on the next append.
// written() is published for readers that follow the log (the online classifier).
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
  LogSink(util::UniqueFd fd, std::string path, uint64_t start_offset,
          std::chrono::milliseconds sync_interval);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  void append(std::string_view bytes);
  // Appends wrapper lines (already marked), starting on a fresh line.
  void append_wrapper_lines(std::string_view lines);
  // Final sync; stops the sync thread. Idempotent.
  void close();

  uint64_t job_bytes() const { return m_job_bytes; }
  uint64_t written() const { return m_written.load(std::memory_order_acquire); }
  uint64_t lost_bytes() const { return m_lost; }
  const std::optional<std::string>& first_error() const { return m_first_error; }
  const std::string& path() const { return m_path; }

  // True once close() began: no byte will be appended any more.
  bool closed() const;
  // Wakes followers (see LogFollower) when new bytes are written.
  void wait_for_more(uint64_t seen, std::chrono::milliseconds max_wait) const;

 private:
  void sync_loop();
  util::UniqueFd m_fd;
  std::string m_path;
  std::atomic<uint64_t> m_written;
  uint64_t m_job_bytes = 0;
  uint64_t m_lost = 0;
  bool m_at_line_start = true;
  std::optional<std::string> m_first_error;
  std::chrono::milliseconds m_interval;
  mutable std::mutex m_mutex;
  mutable std::condition_variable m_cv;
  bool m_stop = false;
  bool m_dirty = false;
  std::thread m_sync_thread;
};

}  // namespace capture
