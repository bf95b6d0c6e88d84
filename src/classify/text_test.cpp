#include "classify/text.hpp"

#include <gtest/gtest.h>

#include "classify/line_splitter.hpp"

namespace classify {
namespace {

std::vector<std::pair<std::string, uint64_t>> split(const std::string& data, size_t chunk,
                                                    size_t cap = k_line_cap) {
  std::vector<std::pair<std::string, uint64_t>> out;
  LineSplitter splitter(cap);
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

TEST(Text, StripPrefixes) {
  auto s = strip_prefixes("[rank3]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] msg");
  EXPECT_EQ(s.text, "msg");
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(strip_prefixes("[E ProcessGroupNCCL.cpp:475] msg").text, "msg");
  s = strip_prefixes(" 12: Traceback (most recent call last):");
  EXPECT_EQ(s.text, "Traceback (most recent call last):");
  EXPECT_EQ(s.rank, 12);
  EXPECT_EQ(strip_prefixes("[default0]:KeyError: 'x'").text, "KeyError: 'x'");
  EXPECT_EQ(strip_prefixes("[1,2]<stderr>:ValueError: bad").text, "ValueError: bad");
  EXPECT_EQ(
      strip_prefixes("W0616 00:37:22.876000 4015698 torch/distributed/elastic/api.py:900] msg")
          .text,
      "msg");
  EXPECT_EQ(strip_prefixes("[INFO] not a glog prefix").text, "[INFO] not a glog prefix");
  EXPECT_EQ(strip_prefixes("Epoch 1: 100%").text, "Epoch 1: 100%");
}

TEST(Text, PrintableReplacesInvalidUtf8) {
  EXPECT_EQ(printable("ok \xc3\xa9"), "ok \xc3\xa9");
  EXPECT_EQ(printable("bad \xff\xfe end"), "bad \xEF\xBF\xBD\xEF\xBF\xBD end");
  EXPECT_EQ(printable("cut \xe2\x82"), "cut \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(printable("tab\tbell\x07"), "tab\tbell");
  EXPECT_EQ(printable(std::string(50, 'a'), 10), std::string(10, 'a') + " [...]");
}

}  // namespace
}  // namespace classify
