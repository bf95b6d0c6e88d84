#include "capture/log_follower.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

struct TempLog {
  std::string path;
  TempLog() {
    char tmpl[] = "/tmp/gpualert-follower-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ::close(fd);
    path = tmpl;
  }
  ~TempLog() { ::unlink(path.c_str()); }
  util::UniqueFd open_for_write() const {
    return util::UniqueFd(::open(path.c_str(), O_WRONLY | O_TRUNC));
  }
};

}  // namespace

TEST(LogFollower, SeesEveryByteInOrder) {
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, 0, std::chrono::milliseconds(50));
  std::string seen;
  capture::LogFollower follower(sink, [&](std::string_view b) { seen.append(b); });
  std::string expected;
  for (int i = 0; i < 2000; ++i) {
    std::string line = "step " + std::to_string(i) + " loss 0.1\n";
    sink.append(line);
    expected += line;
  }
  sink.close();
  follower.finish();
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(follower.skipped(), 0u);
}

TEST(LogFollower, BoundedCatchUpSkipsTheMiddleAndCountsItsLines) {
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, 0, std::chrono::seconds(10));
  std::string line(99, 'x');
  line += '\n';
  for (int i = 0; i < 10000; ++i) {  // 1,000,000 bytes written before anyone reads
    sink.append(line);
  }
  sink.close();
  std::string seen;
  uint64_t skipped_bytes = 0, skipped_lines = 0;
  {
    capture::LogFollower follower(
        sink, [&](std::string_view b) { seen.append(b); },
        [&](uint64_t bytes, uint64_t lines) {
          skipped_bytes += bytes;
          skipped_lines += lines;
        },
        nullptr, /*max_catch_up=*/50'000);
    follower.finish();
  }
  // Whatever was read before the end plus what was skipped is the whole log, and
  // the skip ends on a line boundary.
  EXPECT_EQ(seen.size() + skipped_bytes, 1'000'000u);
  EXPECT_EQ(skipped_bytes % 100, 0u);
  EXPECT_EQ(skipped_lines, skipped_bytes / 100);
  EXPECT_LE(seen.size(), 1'000'000u);
  EXPECT_TRUE(seen.empty() || seen.back() == '\n');
}
