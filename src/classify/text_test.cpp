#include "classify/text.hpp"

#include <gtest/gtest.h>

namespace classify {
namespace {

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
  // An uncaught C++ exception's message, alone or behind a rank's prefix.
  EXPECT_EQ(strip_prefixes("  what():  out of memory").text, "out of memory");
  s = strip_prefixes("[rank2]:  what():  std::bad_alloc");
  EXPECT_EQ(s.text, "std::bad_alloc");
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(strip_prefixes("what(): x").text, "x");
  EXPECT_EQ(strip_prefixes("whatever(): x").text, "whatever(): x");
  EXPECT_EQ(strip_prefixes("[INFO] not a glog prefix").text, "[INFO] not a glog prefix");
  EXPECT_EQ(strip_prefixes("Epoch 1: 100%").text, "Epoch 1: 100%");
}

}  // namespace
}  // namespace classify
