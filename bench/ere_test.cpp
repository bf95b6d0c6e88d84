#include "ere.hpp"

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(GnuEre, TranslatesTheRuleSubset) {
  EXPECT_EQ(to_gnu_ere(R"(NVRM: Xid \([^)]*\): (?:48|64),)", false),
            R"(NVRM: Xid \([^)]*\): (48|64),)");
  EXPECT_EQ(to_gnu_ere(R"(ran for \d+ ms)", false), R"(ran for [0-9]+ ms)");
  EXPECT_EQ(to_gnu_ere(R"((?:^|[\s>:|\]])x)", false), R"((^|[][:space:]>:|])x)");
  EXPECT_EQ(to_gnu_ere("loss[\\x27\"]?", false), "loss['\"]?");
  EXPECT_EQ(to_gnu_ere("nan", true), "[nN][aA][nN]");
  EXPECT_EQ(to_gnu_ere("(?i)bus", false), "[bB][uU][sS]");
  EXPECT_FALSE(to_gnu_ere("a(?=b)", false).has_value());
  EXPECT_FALSE(to_gnu_ere("a+?", false).has_value());
}

}  // namespace
}  // namespace bench
