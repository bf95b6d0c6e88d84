// capture/log_follower.hpp: reads the durable log as it grows, on its own thread.
//
// This is how diagnosis runs beside capture and never in front of it: the copy
// loop only writes the file; the follower reads it back (from the page cache)
// at its own pace and hands chunks to a consumer (the streaming classifier). If
// the consumer is slower than the job, the follower falls behind and catches up
// after the job ended; the copy is never slowed and memory stays bounded.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "capture/log_sink.hpp"

namespace capture {

class LogFollower {
 public:
  using Consumer = std::function<void(std::string_view)>;
  // Called instead of Consumer for a skipped region, which always ends after a '\n'.
  using Skipper = std::function<void(uint64_t bytes, uint64_t newlines)>;
  // Runs first on the follower's thread (to load the rules beside the job, not before it).
  using Starter = std::function<void()>;
  LogFollower(const LogSink& sink, Consumer consumer, Skipper skipper = nullptr,
              Starter starter = nullptr, uint64_t max_catch_up = 16ull << 20);
  ~LogFollower();
  // Call after the sink received its last byte: consumes the rest and joins.
  void finish();
  uint64_t consumed() const { return m_consumed.load(); }
  uint64_t skipped() const { return m_skipped.load(); }

 private:
  void loop();
  // At the end, with a backlog over the bound: skip from offset to just after the
  // first '\n' past end - max_catch_up. Returns the new offset.
  uint64_t skip_backlog(int fd, uint64_t offset, uint64_t end);
  const LogSink& m_sink;
  Consumer m_consumer;
  Skipper m_skipper;
  Starter m_starter;
  uint64_t m_max_catch_up;
  std::atomic<uint64_t> m_skipped{0};
  std::atomic<bool> m_done{false};
  std::atomic<uint64_t> m_consumed{0};
  std::thread m_thread;
};

}  // namespace capture
