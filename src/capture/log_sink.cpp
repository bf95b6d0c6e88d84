#include "capture/log_sink.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace capture {

LogSink::LogSink(util::UniqueFd fd, std::string path, uint64_t start_offset,
                 std::chrono::milliseconds sync_interval)
    : m_fd(std::move(fd)),
      m_path(std::move(path)),
      m_written(start_offset),
      m_interval(sync_interval) {}

void LogSink::start_syncing() {
  if (m_sync_thread.joinable() || m_closed || closed()) {
    return;
  }
  m_sync_thread = std::thread([this] { sync_loop(); });
}

LogSink::~LogSink() { close(); }

void LogSink::append(std::string_view bytes) { write_out(bytes, /*job=*/true); }

void LogSink::write_out(std::string_view bytes, bool job) {
  if (bytes.empty()) {
    return;
  }
  if (job) {
    m_job_bytes += bytes.size();
  }
  std::string_view rest = bytes;
  while (!rest.empty()) {
    ssize_t n = ::write(m_fd.get(), rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (!m_first_error) {
        m_first_error = "writing " + m_path + " failed after " + std::to_string(written()) +
                        " bytes: " + std::strerror(errno);
      }
      m_lost += rest.size();
      break;
    }
    rest.remove_prefix(static_cast<size_t>(n));
    m_written.fetch_add(static_cast<uint64_t>(n), std::memory_order_release);
  }
  m_at_line_start = bytes.back() == '\n';
  bool wake_sync = false;
  {
    std::lock_guard lock(m_mutex);
    m_dirty = true;
    m_job_unsynced = m_job_unsynced || job;
    // Wake-ups cost context switches on the copy path: only when due.
    wake_sync = written() >= m_next_writeback;
  }
  if (wake_sync) {
    m_sync_cv.notify_one();
  }
}

void LogSink::append_wrapper_lines(std::string_view lines) {
  std::string text;
  if (!m_at_line_start) {
    text += '\n';
  }
  text += lines;
  write_out(text, /*job=*/false);
}

void LogSink::finish_writing() {
  {
    std::lock_guard lock(m_mutex);
    if (m_stop) {
      return;
    }
    m_stop = true;
  }
  m_sync_cv.notify_all();
}

void LogSink::close() {
  finish_writing();
  if (m_closed) {
    return;
  }
  m_closed = true;
  if (m_sync_thread.joinable()) {
    m_sync_thread.join();  // it made the last sync
  } else {
    last_sync();  // never started (a short job): the last sync is ours
  }
  // close() is where NFS and some quota setups report a failed writeback.
  if (m_fd.valid() && ::close(m_fd.release()) != 0) {
    std::lock_guard lock(m_mutex);
    if (!m_sync_error) {
      m_sync_error = "closing " + m_path + " failed: " + std::strerror(errno);
    }
  }
}

std::optional<std::string> LogSink::sync_error() const {
  std::lock_guard lock(m_mutex);
  return m_sync_error;
}

void LogSink::sync_now() {
  if (::fdatasync(m_fd.get()) == 0 || errno == EINVAL) {
    return;  // EINVAL: a file that can't be synced (/dev/null, a pipe): nothing to promise
  }
  const int err = errno;
  std::lock_guard lock(m_mutex);
  if (!m_sync_error) {
    m_sync_error = "syncing " + m_path + " to disk failed: " + std::strerror(err);
  }
}

void LogSink::last_sync() {
  bool job_unsynced;
  {
    std::lock_guard lock(m_mutex);  // nothing is appended any more: read, nothing to reset
    job_unsynced = m_job_unsynced;
  }
  // Nothing of the job's since the last sync, only our end lines (which report.json
  // holds too): they reach the disk with the kernel's writeback, like report.json,
  // instead of a sync that waits ~0.2-0.35 ms for the disk and makes nothing of the
  // job's safer. (Starting their writeback without waiting cost half of that.)
  if (job_unsynced) {
    sync_now();  // what the job printed, and the wrapper's end lines with it
  }
}

bool LogSink::closed() const {
  std::lock_guard lock(m_mutex);
  return m_stop;
}

void LogSink::sync_loop() {
  // Two duties: every interval, fdatasync what was written (the durability bound);
  // and whenever k_writeback_chunk more bytes arrived, start their writeback at once
  // (sync_file_range, which does not wait), so that a job printing fast doesn't pile
  // up dirty pages that the next fdatasync, or the last one at exit, must wait for.
  constexpr uint64_t k_writeback_chunk = 8u << 20;
  uint64_t started = written();
  auto next_sync = std::chrono::steady_clock::now() + m_interval;
  std::unique_lock lock(m_mutex);
  m_next_writeback = started + k_writeback_chunk;
  while (!m_stop) {
    m_sync_cv.wait_until(lock, next_sync,
                         [&] { return m_stop || written() - started >= k_writeback_chunk; });
    if (m_stop) {
      break;
    }
    uint64_t end = written();
    lock.unlock();
    if (end - started >= k_writeback_chunk) {
      ::sync_file_range(m_fd.get(), static_cast<off_t>(started), static_cast<off_t>(end - started),
                        SYNC_FILE_RANGE_WRITE);
      started = end;
    }
    lock.lock();
    m_next_writeback = started + k_writeback_chunk;
    if (std::chrono::steady_clock::now() >= next_sync) {
      next_sync = std::chrono::steady_clock::now() + m_interval;
      if (m_dirty) {
        m_dirty = m_job_unsynced = false;
        lock.unlock();
        sync_now();
        lock.lock();
      }
    }
  }
  lock.unlock();
  last_sync();  // after the last append
}

}  // namespace capture
