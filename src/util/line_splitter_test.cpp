#include "util/line_splitter.hpp"

#include <gtest/gtest.h>

#include "util/text.hpp"

namespace util {
namespace {

std::vector<std::pair<std::string, uint64_t>> split(
    const std::string& data, size_t chunk, size_t cap = k_line_cap,
    LineSplitter::Breaks breaks = LineSplitter::Breaks::segments) {
  std::vector<std::pair<std::string, uint64_t>> out;
  LineSplitter splitter(cap, breaks);
  auto cb = [&](std::string_view seg, uint64_t line) { out.emplace_back(std::string(seg), line); };
  for (size_t i = 0; i < data.size(); i += chunk) {
    splitter.feed(std::string_view(data).substr(i, chunk), cb);
  }
  splitter.finish(cb);
  return out;
}

TEST(LineSplitter, CarriageReturnSplitsButKeepsLineNumbers) {
  auto segs = split("a\r\nprogress 1\rprogress 2\rdone\nlast", 1000);
  std::vector<std::pair<std::string, uint64_t>> want = {
      {"a", 1}, {"progress 1", 2}, {"progress 2", 2}, {"done", 2}, {"last", 3}};
  EXPECT_EQ(segs, want);
}

TEST(LineSplitter, SameSegmentsWhateverTheChunking) {
  std::string data;
  for (int i = 0; i < 200; ++i) {
    data += "line " + std::to_string(i) + (i % 7 == 0 ? "\r\n" : i % 5 == 0 ? "\r" : "\n");
  }
  data += "tail without newline";
  auto whole = split(data, data.size());
  for (size_t chunk : {1u, 2u, 3u, 7u, 64u, 1000u}) {
    EXPECT_EQ(split(data, chunk), whole) << "chunk " << chunk;
  }
}

TEST(LineSplitter, LongLinesAreCutAtTheCap) {
  std::string data = std::string(100, 'x') + "\nshort\n";
  for (size_t chunk : {1u, 10u, 1000u}) {
    auto segs = split(data, chunk, 16);
    ASSERT_EQ(segs.size(), 2u);
    EXPECT_EQ(segs[0].first, std::string(16, 'x'));
    EXPECT_EQ(segs[1], std::make_pair(std::string("short"), uint64_t{2}));
  }
}

TEST(LineSplitter, CountsLines) {
  LineSplitter s;
  auto cb = [](std::string_view, uint64_t) {};
  s.feed("a\nb\nc", cb);
  s.finish(cb);
  EXPECT_EQ(s.lines(), 3u);
}

TEST(LineSplitter, LinesModeKeepsCarriageReturnsAndEmptyLines) {
  const auto lines = LineSplitter::Breaks::lines;
  std::string data = "a\r\n\nprogress 1\rprogress 2\n\nlast";
  std::vector<std::pair<std::string, uint64_t>> want = {
      {"a\r", 1}, {"", 2}, {"progress 1\rprogress 2", 3}, {"", 4}, {"last", 5}};
  for (size_t chunk : {1u, 2u, 5u, 1000u}) {
    EXPECT_EQ(split(data, chunk, k_line_cap, lines), want) << "chunk " << chunk;
  }
  EXPECT_EQ(split("x\n", 1000, k_line_cap, lines).size(), 1u);  // no empty line after the last
}

// split_lines is the splitter over a whole buffer: views into the text, '\n' only,
// empty lines kept, a last line without '\n' kept when it has text.
TEST(LineSplitter, SplitLinesOverAWholeBuffer) {
  std::vector<std::string_view> want = {"a", "", "b\r", "tail"};
  EXPECT_EQ(split_lines("a\n\nb\r\ntail"), want);
  want = {"a", "b"};
  EXPECT_EQ(split_lines("a\nb\n"), want);
  EXPECT_TRUE(split_lines("").empty());
  want = {"only"};
  EXPECT_EQ(split_lines("only"), want);
  want = {""};
  EXPECT_EQ(split_lines("\n"), want);
  std::string big(200000, 'z');  // no cap: a whole line, however long
  EXPECT_EQ(split_lines(big + "\n" + big).size(), 2u);
  EXPECT_EQ(split_lines(big + "\n" + big)[1].size(), big.size());
}

}  // namespace
}  // namespace util
