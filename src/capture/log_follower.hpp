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
  LogFollower(const LogSink& sink, Consumer consumer);
  ~LogFollower();
  // Call after the sink received its last byte: consumes the rest and joins.
  void finish();
  uint64_t consumed() const { return m_consumed.load(); }

private:
  void loop();
  const LogSink& m_sink;
  Consumer m_consumer;
  std::atomic<bool> m_done{false};
  std::atomic<uint64_t> m_consumed{0};
  std::thread m_thread;
};

}  // namespace capture
