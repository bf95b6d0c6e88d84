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
      m_interval(sync_interval) {
  m_sync_thread = std::thread([this] { sync_loop(); });
}

LogSink::~LogSink() { close(); }

void LogSink::append(std::string_view bytes) {
  if (bytes.empty()) {
    return;
  }
  m_job_bytes += bytes.size();
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
  {
    std::lock_guard lock(m_mutex);
    m_dirty = true;
  }
  m_cv.notify_all();
}

void LogSink::append_wrapper_lines(std::string_view lines) {
  std::string text;
  if (!m_at_line_start) {
    text += '\n';
  }
  text += lines;
  uint64_t before = m_job_bytes;
  append(text);
  m_job_bytes = before;  // the wrapper's lines are not job output
}

void LogSink::close() {
  {
    std::lock_guard lock(m_mutex);
    if (m_stop) {
      return;
    }
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_sync_thread.joinable()) {
    m_sync_thread.join();
  }
  ::fdatasync(m_fd.get());
}

bool LogSink::closed() const {
  std::lock_guard lock(m_mutex);
  return m_stop;
}

void LogSink::wait_for_more(uint64_t seen, std::chrono::milliseconds max_wait) const {
  std::unique_lock lock(m_mutex);
  m_cv.wait_for(lock, max_wait, [&] { return m_stop || written() > seen; });
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
  while (!m_stop) {
    m_cv.wait_until(lock, next_sync,
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
    if (std::chrono::steady_clock::now() >= next_sync) {
      next_sync = std::chrono::steady_clock::now() + m_interval;
      if (m_dirty) {
        m_dirty = false;
        lock.unlock();
        ::fdatasync(m_fd.get());
        lock.lock();
      }
    }
  }
}

}  // namespace capture
