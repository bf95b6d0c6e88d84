#include "capture/log_follower.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

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

// Follows a closed sink to its end with a bounded catch-up: what was read, and
// what was skipped (bytes, lines).
struct Followed {
  std::string seen;
  uint64_t skipped_bytes = 0, skipped_lines = 0;
};
Followed follow_to_end(const capture::LogSink& sink, uint64_t max_catch_up) {
  Followed f;
  capture::LogFollower follower(
      sink, [&](std::string_view b) { f.seen.append(b); },
      [&](uint64_t bytes, uint64_t lines) {
        f.skipped_bytes += bytes;
        f.skipped_lines += lines;
      },
      nullptr, capture::FollowerLimits{max_catch_up});
  follower.finish();
  return f;
}

}  // namespace

TEST(LogFollower, SeesEveryByteInOrder) {
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::milliseconds(50));
  sink.start_syncing();
  std::string seen;
  capture::LogFollower follower(sink, [&](std::string_view b) { seen.append(b); });
  follower.start();
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

TEST(LogFollower, NeverStartedItReadsAllInFinishAfterItsStarter) {
  // A short job's follower never gets a thread: finish() runs the starter (which
  // loads the rules) and reads everything on the caller's thread, in order.
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::seconds(10));
  std::string events;
  capture::LogFollower follower(
      sink, [&](std::string_view b) { events.append(b); }, nullptr,
      [&] { events.append("[started]"); });
  sink.append("step 1 loss 2.3\n");
  sink.append("Traceback (most recent call last):\n");
  sink.close();
  follower.finish();
  EXPECT_EQ(events, "[started]step 1 loss 2.3\nTraceback (most recent call last):\n");
  follower.start();  // too late: a no-op, not a thread reading past the end
  follower.finish();
  EXPECT_EQ(follower.consumed(), sink.written());
}

TEST(LogFollower, BoundedCatchUpSkipsTheMiddleAndCountsItsLines) {
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::seconds(10));
  std::string line(99, 'x');
  line += '\n';
  for (int i = 0; i < 10000; ++i) {  // 1,000,000 bytes written before anyone reads
    sink.append(line);
  }
  sink.close();
  auto [seen, skipped_bytes, skipped_lines] = follow_to_end(sink, 50'000);
  // Whatever was read before the end plus what was skipped is the whole log, and
  // the skip ends on a line boundary.
  EXPECT_EQ(seen.size() + skipped_bytes, 1'000'000u);
  EXPECT_EQ(skipped_bytes % 100, 0u);
  EXPECT_EQ(skipped_lines, skipped_bytes / 100);
  EXPECT_LE(seen.size(), 1'000'000u);
  EXPECT_TRUE(seen.empty() || seen.back() == '\n');
}

TEST(LogSink, LineMarksSayWhereLinesEndAndHowManyCameBefore) {
  TempLog log;
  std::string header = "#gpualert# header one\n#gpualert# header two\n";
  {
    util::UniqueFd fd = log.open_for_write();
    ASSERT_EQ(::write(fd.get(), header.data(), header.size()), static_cast<ssize_t>(header.size()));
  }
  util::UniqueFd fd(::open(log.path.c_str(), O_WRONLY | O_APPEND));
  capture::LogSink sink(std::move(fd), log.path, {header.size(), 2}, std::chrono::seconds(10));
  // Lines of varied length, appended in pieces that cut lines anywhere.
  std::string text;
  for (int i = 0; text.size() < (5u << 20); ++i) {
    text += "step " + std::to_string(i) + std::string(static_cast<size_t>(i % 300), 'x') + "\n";
  }
  for (size_t pos = 0; pos < text.size();) {
    size_t n = std::min<size_t>(text.size() - pos, 70001);
    sink.append(std::string_view(text).substr(pos, n));
    pos += n;
  }
  sink.close();
  std::string file = header + text;
  EXPECT_FALSE(sink.line_mark_before(header.size()).has_value());
  int marks = 0;
  uint64_t previous = 0;
  for (uint64_t at = 0; at <= file.size(); at += 100'000) {
    auto mark = sink.line_mark_before(at);
    if (!mark) {
      continue;
    }
    EXPECT_LE(mark->offset, at);
    EXPECT_GE(mark->offset, previous);
    EXPECT_EQ(file[mark->offset - 1], '\n');
    EXPECT_EQ(mark->lines,
              static_cast<uint64_t>(std::count(file.begin(), file.begin() + mark->offset, '\n')));
    marks += mark->offset != previous ? 1 : 0;
    previous = mark->offset;
  }
  EXPECT_GE(marks, 4);  // about one per MiB
}

TEST(LogFollower, SkipsThroughLineMarksWithExactLineCounts) {
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::seconds(10));
  std::string all;
  for (int i = 0; all.size() < (6u << 20); ++i) {
    std::string line =
        "line " + std::to_string(i) + std::string(static_cast<size_t>(i % 97), '.') + "\n";
    all += line;
    sink.append(line);
  }
  sink.close();
  auto [seen, skipped_bytes, skipped_lines] = follow_to_end(sink, 1u << 20);
  ASSERT_GT(skipped_bytes, 0u);
  EXPECT_LE(seen.size(), (1u << 20) + capture::LogSink::k_mark_spacing + 200);
  EXPECT_EQ(skipped_bytes + seen.size(), all.size());
  EXPECT_EQ(all.substr(skipped_bytes), seen);
  EXPECT_EQ(skipped_lines, static_cast<uint64_t>(std::count(
                               all.begin(), all.begin() + static_cast<long>(skipped_bytes), '\n')));
}

TEST(LogFollower, JumpsIntoALastLineLongerThanTheCatchUp) {
  // A job whose output ends in one enormous line without a newline: the end-of-job
  // catch-up reads at most its bound, not the line, and still knows the line count.
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::seconds(10));
  std::string head;
  for (int i = 0; i < 100; ++i) {
    head += "step " + std::to_string(i) + "\n";
  }
  sink.append(head);
  std::string piece(256 << 10, 'x');
  for (int i = 0; i < 24; ++i) {  // a 6 MiB line, still open at the end
    sink.append(piece);
  }
  sink.close();
  const uint64_t total = head.size() + 24 * piece.size();
  auto [seen, skipped_bytes, skipped_lines] = follow_to_end(sink, 64 << 10);
  EXPECT_EQ(seen.size() + skipped_bytes, total);
  EXPECT_LE(seen.size(), 64u << 10);
  EXPECT_EQ(skipped_lines, 100u);
  EXPECT_EQ(seen, std::string(seen.size(), 'x'));
}

TEST(LogFollower, JumpsPastALongLineToALineEndAfterTheCut) {
  // A long line in the middle, short lines at the end: no line mark lies near the
  // cut, so the skip lands on the first line end known after it, and counts exactly.
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::seconds(10));
  std::string all = "first\n";
  sink.append(all);
  std::string piece(256 << 10, 'y');
  for (int i = 0; i < 16; ++i) {  // a 4 MiB line
    sink.append(piece);
    all += piece;
  }
  std::string rest = "\n";
  for (int i = 0; rest.size() < (200 << 10); ++i) {
    rest += "short line " + std::to_string(i) + "\n";
  }
  sink.append(rest);
  all += rest;
  sink.close();
  auto [seen, skipped_bytes, skipped_lines] = follow_to_end(sink, 100 << 10);
  ASSERT_GT(skipped_bytes, 0u);
  EXPECT_EQ(skipped_bytes + seen.size(), all.size());
  EXPECT_LE(seen.size(), 100u << 10);
  EXPECT_EQ(all.substr(skipped_bytes), seen);
  EXPECT_EQ(all[skipped_bytes - 1], '\n');
  EXPECT_EQ(skipped_lines, static_cast<uint64_t>(std::count(
                               all.begin(), all.begin() + static_cast<long>(skipped_bytes), '\n')));
}

TEST(LogFollower, IdlePriorityOnlyOnceFarBehind) {
  // A short job's lines are read at normal priority (the wrapper's exit waits for
  // them); a follower that falls far behind a job printing in bulk goes idle.
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::seconds(10));
  std::atomic<int> first_policy{-1}, last_policy{-1};
  std::atomic<bool> hold{true};
  capture::FollowerLimits limits;
  limits.idle_backlog = 256 << 10;
  capture::LogFollower follower(
      sink,
      [&](std::string_view) {
        int policy = ::sched_getscheduler(0);
        int expected = -1;
        first_policy.compare_exchange_strong(expected, policy);
        last_policy = policy;
        while (hold.load()) {  // the first chunk is slow: the job gets far ahead
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      },
      nullptr, nullptr, limits);
  follower.start();
  sink.append("step 1 loss 2.3\n");
  for (int i = 0; i < 1000 && first_policy.load() < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string piece(64 << 10, 'x');
  piece.back() = '\n';
  for (int i = 0; i < 8; ++i) {  // 512 KiB behind
    sink.append(piece);
  }
  hold = false;
  for (int i = 0; i < 1000 && follower.consumed() < sink.written(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(first_policy.load(), SCHED_OTHER);
  EXPECT_EQ(last_policy.load(), SCHED_IDLE);
  sink.close();
  follower.finish();
}

TEST(LogFollower, DefersWhileTheJobPoursAndCatchesUpWhenItStops) {
  TempLog log;
  capture::LogSink sink(log.open_for_write(), log.path, {}, std::chrono::seconds(10));
  std::atomic<int> calls{0};
  uint64_t seen = 0;
  capture::FollowerLimits limits;
  limits.defer_backlog = 1u << 20;
  limits.defer_rate = 1u << 20;  // 1 MiB/s: the writer below is far faster
  capture::LogFollower follower(
      sink,
      [&](std::string_view b) {
        seen += b.size();
        if (calls++ == 0) {  // slow on the first chunk: the writer gets ahead
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      },
      nullptr, nullptr, limits);
  follower.start();
  sink.append("first line\n");
  // Pour 8 MiB at once while the follower is inside its slow first chunk: it then
  // sees a backlog over the bound that grew far faster than the rate. (Pouring in
  // 1 ms steps failed ~1 run in 6 under `ctest -j2`: on a loaded machine the sleeps
  // stretched, the follower kept up, and there was no pouring to see.)
  for (int i = 0; i < 1000 && calls.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(calls.load(), 0);
  std::string piece(64 << 10, 'x');
  piece.back() = '\n';
  for (int i = 0; i < 128; ++i) {
    sink.append(piece);
  }
  // Quiet now, the sink still open: the follower must resume and read everything.
  for (int i = 0; i < 1000 && follower.consumed() < sink.written(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(follower.deferred());
  EXPECT_EQ(follower.consumed(), sink.written());
  EXPECT_EQ(follower.skipped(), 0u);
  sink.close();
  follower.finish();
  EXPECT_EQ(seen, sink.written());
}
