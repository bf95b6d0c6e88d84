#include "classify/hs_compile_wire.hpp"

#include <gtest/gtest.h>

#include <string>

#include "classify/hs_compile.hpp"

namespace classify {
namespace {

TEST(HsCompileWire, PatternsPassAsTheyAreNewlinesAndNulsIncluded) {
  std::vector<HsExpression> in = {
      {"^Traceback", 8, 0}, {std::string("a\nb\0c", 5), 1, 7}, {"", 0, 4294967295u}};
  auto out = wire::decode_request(wire::encode_request(in));
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->size(), 3u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].pattern, in[i].pattern);
    EXPECT_EQ((*out)[i].flags, in[i].flags);
    EXPECT_EQ((*out)[i].id, in[i].id);
  }
  EXPECT_EQ(wire::decode_request("")->size(), 0u);
}

TEST(HsCompileWire, ADatabaseOrAnErrorNamingItsExpression) {
  HsCompiled db;
  db.database = std::string("\x00\x01\n\xff", 4);
  auto back = wire::decode_compiled(wire::encode_compiled(db));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->database, db.database);
  EXPECT_TRUE(back->error.empty());

  HsCompiled failed;
  failed.error = "Pattern matches empty buffer";
  failed.expression = 3;
  back = wire::decode_compiled(wire::encode_compiled(failed));
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->database.empty());
  EXPECT_EQ(back->error, failed.error);
  EXPECT_EQ(back->expression, 3);

  failed.expression = -1;
  EXPECT_EQ(wire::decode_compiled(wire::encode_compiled(failed))->expression, -1);
}

TEST(HsCompileWire, OneMessagePerExpressionEmptyWhenItCompiles) {
  std::vector<std::string> checks = {"", "Missing close parenthesis", ""};
  auto back = wire::decode_checks(wire::encode_checks(checks));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, checks);
}

TEST(HsCompileWire, ATruncatedOrMalformedMessageIsRefused) {
  std::string request = wire::encode_request({{"abc", 0, 1}});
  EXPECT_FALSE(wire::decode_request(request.substr(0, request.size() - 2)).has_value());
  EXPECT_FALSE(wire::decode_request("0 1\nabc\n").has_value());
  EXPECT_FALSE(wire::decode_request("x 1 3\nabc\n").has_value());
  EXPECT_FALSE(wire::decode_request("0 1 -3\nabc\n").has_value());
  EXPECT_FALSE(wire::decode_compiled("ok 10\nshort").has_value());
  EXPECT_FALSE(wire::decode_compiled("ok 0\n").has_value());
  EXPECT_FALSE(wire::decode_compiled("ok 2\nabc").has_value());  // trailing bytes
  EXPECT_FALSE(wire::decode_compiled("maybe 1\na").has_value());
  EXPECT_FALSE(wire::decode_compiled("").has_value());
  EXPECT_FALSE(wire::decode_checks("5\nabc").has_value());
}

// The in-process compiler, which every program but `gpualert` links (the helper too).
TEST(HsCompile, InProcessCompilesOrNamesTheExpressionThatFails) {
  auto good = hs_compile_serialized({{"error", 0, 0}, {"warn(ing)?", 0, 1}});
  EXPECT_TRUE(good.error.empty());
  EXPECT_FALSE(good.database.empty());
  auto bad = hs_compile_serialized({{"fine", 0, 0}, {"(unclosed", 0, 1}});
  EXPECT_TRUE(bad.database.empty());
  EXPECT_EQ(bad.expression, 1);
  EXPECT_NE(bad.error.find("parenthesis"), std::string::npos);
  auto each = hs_check_each({{"fine", 0, 0}, {"x*", 0, 0}});
  ASSERT_TRUE(each);
  ASSERT_EQ(each->size(), 2u);
  EXPECT_EQ((*each)[0], "");
  EXPECT_NE((*each)[1].find("empty buffer"), std::string::npos);
}

}  // namespace
}  // namespace classify
