#include "capture/feed.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "util/count.hpp"

namespace capture {

OutputFeed::OutputFeed(Consumer consumer, Skipper skipper, size_t capacity)
    : m_consumer(std::move(consumer)), m_skipper(std::move(skipper)), m_capacity(capacity) {}

OutputFeed::~OutputFeed() {
  {
    std::lock_guard lock(m_mutex);
    m_done = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

uint64_t OutputFeed::dropped() const {
  std::lock_guard lock(m_mutex);
  return m_dropped;
}

void OutputFeed::drop_oldest(size_t need) {
  // The unread bytes [from, from + count), as at most two contiguous pieces.
  auto pieces = [&](size_t from, size_t count, auto&& each) {
    while (count > 0) {
      size_t at = (m_head + from) % m_capacity;
      size_t piece = std::min(count, m_capacity - at);
      if (!each(std::string_view(m_ring.get() + at, piece), from)) {
        return;
      }
      from += piece;
      count -= piece;
    }
  };
  // At least `need` bytes, then on to the end of that line, so that the consumer's
  // next chunk starts a line; when no line ends in the rest, just `need`.
  size_t drop = std::min(need, m_size);
  if (drop > 0 && drop < m_size) {
    pieces(drop - 1, m_size - drop + 1, [&](std::string_view v, size_t from) {
      const void* nl = std::memchr(v.data(), '\n', v.size());
      if (nl == nullptr) {
        return true;
      }
      drop = from + static_cast<size_t>(static_cast<const char*>(nl) - v.data()) + 1;
      return false;
    });
  }
  uint64_t lines = 0;
  pieces(0, drop, [&](std::string_view v, size_t) {
    lines += util::count_newlines(v);
    return true;
  });
  m_head = (m_head + drop) % m_capacity;
  m_size -= drop;
  m_skip_bytes += drop;
  m_skip_lines += lines;
  m_dropped += drop;
}

void OutputFeed::push(std::string_view bytes) {
  while (!bytes.empty()) {
    auto space = reserve(bytes.size());
    std::memcpy(space.data(), bytes.data(), space.size());
    commit(space.size());
    bytes.remove_prefix(space.size());
  }
}

std::span<char> OutputFeed::reserve(size_t max) {
  std::lock_guard lock(m_mutex);
  if (!m_ring) {
    // Not zero-filled: a job that prints little touches a page or two of it.
    m_ring = std::make_unique_for_overwrite<char[]>(m_capacity);
  }
  if (m_size == 0) {
    m_head = 0;  // all read: the whole ring is one contiguous space again
  }
  const size_t tail = (m_head + m_size) % m_capacity;
  const size_t want = std::max<size_t>(1, std::min(max, m_capacity - tail));
  if (m_capacity - m_size < want) {
    drop_oldest(want - (m_capacity - m_size));  // from the head: the tail stays where it is
  }
  return {m_ring.get() + tail, want};
}

void OutputFeed::commit(size_t filled) {
  if (filled == 0) {
    return;
  }
  bool wake = false;
  {
    std::lock_guard lock(m_mutex);
    m_size += filled;
    wake = m_waiting;
  }
  if (wake) {
    m_cv.notify_one();
  }
}

bool OutputFeed::take(uint64_t& skip_bytes, uint64_t& skip_lines, size_t& len) {
  if (m_size == 0 && m_skip_bytes == 0) {
    return false;
  }
  skip_bytes = m_skip_bytes;
  skip_lines = m_skip_lines;
  m_skip_bytes = m_skip_lines = 0;
  len = std::min(m_size, k_take);
  if (!m_out) {
    m_out = std::make_unique_for_overwrite<char[]>(k_take);
  }
  size_t first = std::min(len, m_capacity - m_head);
  if (len > 0) {
    std::memcpy(m_out.get(), m_ring.get() + m_head, first);
    std::memcpy(m_out.get() + first, m_ring.get(), len - first);
  }
  m_head = (m_head + len) % m_capacity;
  m_size -= len;
  return true;
}

void OutputFeed::consume(uint64_t skip_bytes, uint64_t skip_lines, size_t len) {
  if (skip_bytes > 0 && m_skipper) {
    m_skipper(skip_bytes, skip_lines);
  }
  if (len > 0) {
    m_consumer(std::string_view(m_out.get(), len));
  }
}

void OutputFeed::loop() {
  std::unique_lock lock(m_mutex);
  bool idle = false;
  for (;;) {
    uint64_t sb = 0, sl = 0;
    size_t len = 0;
    if (take(sb, sl, len)) {
      if (!idle && m_size > m_capacity / 2) {
        // The job prints in bulk: from now on diagnosis only gets the CPU nobody
        // else wants, never competing with the copy or the job; when it can't keep
        // up, the ring drops the oldest bytes and the end is still read. Not before:
        // an idle thread can starve for seconds on a busy node, and unprivileged it
        // can't come back, so a job printing little is read at normal priority.
        struct sched_param none {};
        ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none);
        idle = true;
      }
      lock.unlock();
      consume(sb, sl, len);
      lock.lock();
      if (idle && m_size > m_capacity / 2 && !m_done) {
        // Still far behind: the job prints faster than the rules read, and the ring
        // drops what is not read in time. Reading on at full speed would only take CPU
        // from the job and the copy to read a fraction of the flood; a sample of it
        // every k_flood_pause is read instead, and the ring is caught up with once the
        // job pauses or ends (its end is always read).
        m_cv.wait_for(lock, k_flood_pause, [this] { return m_done; });
      }
      continue;
    }
    if (m_done) {
      return;
    }
    m_waiting = true;
    m_cv.wait(lock);
    m_waiting = false;
  }
}

void OutputFeed::start() {
  std::lock_guard lock(m_mutex);
  if (m_thread.joinable() || m_finished) {
    return;
  }
  m_thread = std::thread([this] { loop(); });
}

void OutputFeed::finish() {
  {
    std::lock_guard lock(m_mutex);
    if (m_finished) {
      return;
    }
    m_finished = true;
    m_done = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) {
    m_thread.join();  // it consumed everything pushed before m_done
  }
  std::unique_lock lock(m_mutex);
  uint64_t sb = 0, sl = 0;
  size_t len = 0;
  while (take(sb, sl, len)) {
    lock.unlock();
    consume(sb, sl, len);
    lock.lock();
  }
}

}  // namespace capture
