#include "capture/feed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Collected {
  std::string text;
  uint64_t skipped = 0, skipped_lines = 0;
  std::vector<std::string> order;  // "feed" / "skip", as they came
};

capture::OutputFeed make(Collected& c, size_t capacity) {
  return capture::OutputFeed(
      [&c](std::string_view b) {
        c.text.append(b);
        c.order.push_back("feed");
      },
      [&c](uint64_t bytes, uint64_t lines) {
        c.skipped += bytes;
        c.skipped_lines += lines;
        c.order.push_back("skip");
      },
      capacity);
}

TEST(OutputFeed, WithoutTheThreadFinishHandsOverEverythingInOrder) {
  Collected c;
  auto feed = make(c, 1024);
  feed.push("line 1\n");
  feed.push("line 2\nline");
  feed.push(" 3\n");
  EXPECT_TRUE(c.text.empty());  // nothing is read on the copy path
  feed.finish();
  feed.finish();  // idempotent
  EXPECT_EQ(c.text, "line 1\nline 2\nline 3\n");
  EXPECT_EQ(feed.dropped(), 0u);
}

TEST(OutputFeed, TheThreadReadsEverythingWhenItKeepsUp) {
  Collected c;
  auto feed = make(c, 1u << 20);
  feed.start();
  std::string expected;
  for (int i = 0; i < 2000; ++i) {
    std::string line = "step " + std::to_string(i) + " loss 0.5\n";
    expected += line;
    feed.push(line);
  }
  feed.finish();
  EXPECT_EQ(c.text, expected);
  EXPECT_EQ(feed.dropped(), 0u);
}

TEST(OutputFeed, AFullRingDropsTheOldestWholeLinesAndKeepsTheEnd) {
  // No consumer until finish(): 100 lines of 10 bytes into a ring of 64 bytes.
  Collected c;
  auto feed = make(c, 64);
  std::string all;
  for (int i = 0; i < 100; ++i) {
    char line[16];
    std::snprintf(line, sizeof line, "line %03d\n", i);  // 9 bytes
    all += line;
    feed.push(line);
  }
  feed.finish();
  EXPECT_EQ(c.skipped + c.text.size(), all.size());
  EXPECT_EQ(feed.dropped(), c.skipped);
  EXPECT_LE(c.text.size(), 64u);
  // What was read is the end of the output, starting on a line.
  EXPECT_EQ(all.substr(all.size() - c.text.size()), c.text);
  EXPECT_EQ(c.text.substr(0, 5), "line ");
  EXPECT_TRUE(c.text.ends_with("line 099\n"));
  // The skipped part's line count is exact, and it was told before the feed.
  EXPECT_EQ(c.skipped_lines, c.skipped / 9);
  ASSERT_EQ(c.order.front(), "skip");
}

TEST(OutputFeed, AChunkLargerThanTheRingKeepsItsTail) {
  Collected c;
  auto feed = make(c, 32);
  feed.push("old\n");
  std::string big(100, 'x');
  big[10] = '\n';
  big[50] = '\n';
  big += "\nlast line\n";
  feed.push(big);
  feed.finish();
  EXPECT_EQ(c.skipped + c.text.size(), 4 + big.size());
  EXPECT_TRUE(c.text.ends_with("last line\n"));
  // "old\n" and the two '\n' inside the cut part of the big chunk.
  const std::string cut = ("old\n" + big).substr(0, c.skipped);
  EXPECT_EQ(c.skipped_lines, static_cast<uint64_t>(std::count(cut.begin(), cut.end(), '\n')));
}

TEST(OutputFeed, ALongLineWithoutBreaksIsDroppedInsideItself) {
  Collected c;
  auto feed = make(c, 16);
  for (int i = 0; i < 10; ++i) {
    feed.push("abcdefgh");  // never a '\n'
  }
  feed.finish();
  EXPECT_EQ(c.skipped + c.text.size(), 80u);
  EXPECT_EQ(c.skipped_lines, 0u);
  EXPECT_EQ(c.text.size(), 16u);
}

// What the copy loop does: read the job's pipe straight into the ring.
void fill(capture::OutputFeed& feed, std::string_view bytes, size_t read_size) {
  while (!bytes.empty()) {
    auto space = feed.reserve(read_size);
    ASSERT_FALSE(space.empty());
    size_t n = std::min(space.size(), bytes.size());
    std::copy_n(bytes.data(), n, space.data());
    feed.commit(n);
    bytes.remove_prefix(n);
  }
}

TEST(OutputFeed, ReservedSpaceIsReadInOrderAcrossTheRingsEnd) {
  Collected c;
  auto feed = make(c, 64);
  feed.start();
  std::string all;
  for (int i = 0; i < 40; ++i) {
    std::string line = "line " + std::to_string(i) + "\n";
    all += line;
    fill(feed, line, 16);  // pieces of at most 16 bytes, wrapping the 64-byte ring
  }
  feed.finish();
  EXPECT_EQ(c.skipped + c.text.size(), all.size());
  EXPECT_TRUE(c.text.ends_with("line 39\n"));
  EXPECT_EQ(all.substr(all.size() - c.text.size()), c.text);
  const std::string cut = all.substr(0, c.skipped);
  EXPECT_EQ(c.skipped_lines, static_cast<uint64_t>(std::count(cut.begin(), cut.end(), '\n')));
}

TEST(OutputFeed, ReservingInAFullRingDropsTheOldestWholeLines) {
  Collected c;
  auto feed = make(c, 64);
  std::string all;
  for (int i = 0; i < 100; ++i) {
    char line[16];
    std::snprintf(line, sizeof line, "line %03d\n", i);  // 9 bytes
    all += line;
    fill(feed, line, 32);
  }
  auto unused = feed.reserve(32);  // reserved and left empty: nothing appears
  EXPECT_FALSE(unused.empty());
  feed.commit(0);
  feed.finish();
  EXPECT_EQ(c.skipped + c.text.size(), all.size());
  EXPECT_EQ(feed.dropped(), c.skipped);
  EXPECT_EQ(c.text.substr(0, 5), "line ");
  EXPECT_TRUE(c.text.ends_with("line 099\n"));
  EXPECT_EQ(c.skipped_lines, c.skipped / 9);
}

TEST(OutputFeed, PushAndReserveMix) {
  Collected c;
  auto feed = make(c, 1024);
  feed.push("a\n");
  fill(feed, "b\n", 8);
  feed.push("c\n");
  feed.finish();
  EXPECT_EQ(c.text, "a\nb\nc\n");
}

}  // namespace
