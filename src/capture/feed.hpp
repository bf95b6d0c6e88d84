// capture/feed.hpp: hands the job's output, as it is copied, to diagnosis.
//
// The copy loop reads the job's pipe straight into a bounded ring in memory
// (reserve()/commit(); push() copies bytes in); the consumer (the streaming
// classifier) takes them from there, on a thread of its own once start() was called,
// else in finish() on the caller's thread. Nothing is read back from the log file, so
// what the job printed is diagnosed even when the disk refused it. The copy loop never
// waits for the consumer: when the ring is full (a job printing faster than the rules
// read), the oldest unread bytes are dropped up to a line end and handed to the Skipper
// instead (with their line count), so the end of the output, where a job's last error
// is, is always read, and memory stays bounded. Once it is over half the ring behind,
// the consumer runs at idle CPU priority and, while the flood lasts, reads only a
// sample of it, so that diagnosis never competes with the job or the copy.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>

namespace capture {

class OutputFeed {
 public:
  using Consumer = std::function<void(std::string_view)>;
  // Called, in order with the Consumer's chunks, for bytes dropped unread: they
  // hold exactly `newlines` '\n' and end after one unless no line ended in them.
  using Skipper = std::function<void(uint64_t bytes, uint64_t newlines)>;
  static constexpr size_t k_default_capacity = 2u << 20;
  OutputFeed(Consumer consumer, Skipper skipper, size_t capacity = k_default_capacity);
  ~OutputFeed();
  OutputFeed(const OutputFeed&) = delete;
  OutputFeed& operator=(const OutputFeed&) = delete;

  // From the copy loop: never blocks on the consumer.
  void push(std::string_view bytes);
  // The same without a copy: reserve() gives the place in the ring where the next
  // bytes go (contiguous, at most max bytes, never empty), making room by dropping the
  // oldest unread bytes when the ring is full; the caller reads the job's pipe straight
  // into it and commit()s how many bytes it put there (0 is fine). The span stays valid,
  // and unread by the consumer, until commit(); what was committed stays in place until
  // the next reserve() or push().
  std::span<char> reserve(size_t max);
  void commit(size_t filled);
  // Starts the consumer's thread (idempotent; a no-op after finish()).
  void start();
  // No more pushes: joins the thread, then consumes what is left on the caller's
  // thread (at most the capacity). Idempotent.
  void finish();
  // Bytes dropped unread so far.
  uint64_t dropped() const;

 private:
  void loop();
  // Takes up to k_take bytes out of the ring into m_out (with the pending skip);
  // false when there is nothing. Called with m_mutex held.
  bool take(uint64_t& skip_bytes, uint64_t& skip_lines, size_t& len);
  void consume(uint64_t skip_bytes, uint64_t skip_lines, size_t len);
  void drop_oldest(size_t need);  // m_mutex held

  Consumer m_consumer;
  Skipper m_skipper;
  const size_t m_capacity;
  static constexpr size_t k_take = 256u << 10;
  static constexpr std::chrono::milliseconds k_flood_pause{100};
  std::unique_ptr<char[]> m_ring;  // allocated on the first push
  std::unique_ptr<char[]> m_out;   // the consumer's copy of what it took
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  size_t m_head = 0;                            // where the next unread byte is
  size_t m_size = 0;                            // unread bytes
  uint64_t m_skip_bytes = 0, m_skip_lines = 0;  // dropped, not yet told to the Skipper
  uint64_t m_dropped = 0;
  bool m_waiting = false;  // the consumer sleeps: a push wakes it
  bool m_done = false;
  bool m_finished = false;
  std::thread m_thread;
};

}  // namespace capture
