// capture/log_follower.hpp: reads the durable log as it grows, on its own thread.
//
// This is how diagnosis runs beside capture and never in front of it: the copy
// loop only writes the file; the follower reads it back (from the page cache)
// at its own pace, and hands chunks to a consumer (the streaming classifier); once it
// falls more than FollowerLimits::idle_backlog behind, at idle CPU priority. Memory
// stays bounded whatever the job prints.
//
// A job that prints faster than the consumer reads: the follower falls behind.
// While it is more than FollowerLimits::defer_backlog behind and the job keeps printing
// faster than FollowerLimits::defer_rate, it stops reading (even idle CPU time is memory
// bandwidth and cache the copy needs) and resumes when the job slows down. At the
// end it reads at most FollowerLimits::max_catch_up (plus two line marks' spacing) of
// what it has not read, jumping over the rest to a place where the sink knows the line
// count (a line mark, the last line end, or inside a last line longer than the bound),
// so the wrapper's exit is never held for long, whatever the lines' length.
//
// The thread runs from start() on. A follower never started (`run` starts it only
// for a job that outlives its first moments) reads what there is in finish(), on
// the caller's thread, within the same catch-up bound.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "capture/log_sink.hpp"
#include "util/fd.hpp"

namespace capture {

struct FollowerLimits {
  uint64_t max_catch_up = 4ull << 20;
  uint64_t defer_backlog = 32ull << 20;
  uint64_t defer_rate = 64ull << 20;   // bytes per second
  uint64_t idle_backlog = 1ull << 20;  // further behind than this: idle CPU priority
};

class LogFollower {
 public:
  using Consumer = std::function<void(std::string_view)>;
  // Called instead of Consumer for a skipped region, which ends after a '\n', or,
  // when the log ends in a line longer than the catch-up, inside that line.
  using Skipper = std::function<void(uint64_t bytes, uint64_t newlines)>;
  // Runs first on the follower's thread, or in finish() when it was never started.
  using Starter = std::function<void()>;
  LogFollower(const LogSink& sink, Consumer consumer, Skipper skipper = nullptr,
              Starter starter = nullptr, FollowerLimits limits = {});
  ~LogFollower();
  // Starts following on a thread of its own (idempotent; a no-op after finish()).
  void start();
  // Call after the sink received its last byte: joins the thread, then reads
  // what is left (at most FollowerLimits::max_catch_up and a mark's spacing) on the
  // calling thread.
  void finish();
  uint64_t consumed() const { return m_consumed.load(); }
  uint64_t skipped() const { return m_skipped.load(); }
  // Whether reading was ever deferred for a job printing too fast.
  bool deferred() const { return m_deferred.load(); }

 private:
  void loop();
  // Reads and consumes one chunk at m_offset, below end; false on EOF or error.
  bool read_chunk(uint64_t end);
  // At the end, with a backlog over the bound: skip from m_offset (after m_lines
  // line breaks) to a place near end - FollowerLimits::max_catch_up where the sink
  // knows the line count (a line mark, its last line end, or inside the log's last
  // line when that one is longer than the catch-up); updates both. Reads nothing.
  void skip_backlog(uint64_t end);
  void jump_to(const LineMark& mark);
  void skipped(uint64_t bytes, uint64_t newlines);
  const LogSink& m_sink;
  Consumer m_consumer;
  Skipper m_skipper;
  Starter m_starter;
  FollowerLimits m_limits;
  std::atomic<uint64_t> m_skipped{0};
  std::atomic<bool> m_done{false};
  std::atomic<bool> m_deferred{false};
  std::atomic<uint64_t> m_consumed{0};
  // Owned by the thread until it is joined, then by finish().
  util::UniqueFd m_fd;
  static constexpr size_t k_buf_size = 1 << 20;
  std::unique_ptr<char[]> m_buf;  // allocated on first read
  uint64_t m_offset = 0;
  uint64_t m_lines = 0;  // '\n' in [0, m_offset)
  bool m_finished = false;
  bool m_started = false;
  std::thread m_thread;
};

}  // namespace capture
