#include "util/text.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "util/count.hpp"
#include "util/fd.hpp"
#include "util/scoped_env.hpp"

using namespace std::chrono_literals;

TEST(ParseDuration, AcceptsTheUsualForms) {
  EXPECT_EQ(*util::parse_duration("90s"), 90s);
  EXPECT_EQ(*util::parse_duration("90"), 90s);
  EXPECT_EQ(*util::parse_duration("2h"), 2h);
  EXPECT_EQ(*util::parse_duration("1h30m"), 90min);
  EXPECT_EQ(*util::parse_duration("1.5h"), 90min);
  EXPECT_EQ(*util::parse_duration("500ms"), 500ms);
  EXPECT_EQ(*util::parse_duration("1d"), 24h);
}

TEST(ParseDuration, RejectsWithTheOffendingText) {
  for (const char* bad : {"", "soon", "-3s", "3x", "s", "1h-", "0s", "1e400h"}) {
    auto r = util::parse_duration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("invalid duration"), std::string::npos);
  }
  EXPECT_TRUE(util::parse_duration("0s", true).ok());
}

TEST(ParseSize, BinaryAndDecimalUnits) {
  EXPECT_EQ(*util::parse_size("10MiB"), 10u << 20);
  EXPECT_EQ(*util::parse_size("512k"), 512u << 10);
  EXPECT_EQ(*util::parse_size("1G"), 1ull << 30);
  EXPECT_EQ(*util::parse_size("1MB"), 1000000u);
  EXPECT_EQ(*util::parse_size("1000"), 1000u);
  EXPECT_FALSE(util::parse_size("lots").ok());
  EXPECT_FALSE(util::parse_size("10 parsecs").ok());
}

TEST(ShellQuote, PlainWordsStayPlain) {
  EXPECT_EQ(util::shell_quote("train.py"), "train.py");
  EXPECT_EQ(util::shell_quote("--lr=3e-4"), "--lr=3e-4");
  EXPECT_EQ(util::shell_quote(""), "''");
}

TEST(ShellQuote, QuotesAndControlCharactersStayOneLine) {
  EXPECT_EQ(util::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(util::shell_quote("a b"), "'a b'");
  std::string q = util::shell_quote("evil\r\nBcc: x");
  EXPECT_EQ(q.find('\n'), std::string::npos);
  EXPECT_EQ(q.find('\r'), std::string::npos);
  EXPECT_EQ(q, "$'evil\\r\\nBcc: x'");
}

TEST(PrintableLine, ReplacesControlsAndInvalidUtf8) {
  EXPECT_EQ(util::printable_line("ok \xc3\xa9"), "ok \xc3\xa9");
  EXPECT_EQ(util::printable_line("a\nb"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(util::printable_line("\xff"), "\xEF\xBF\xBD");
  EXPECT_EQ(util::printable_line("\xc3("), "\xEF\xBF\xBD(");
}

// sanitize_utf8 is the one sanitizer: the report's evidence (drop), a mail's text
// (keep) and table cells (replace) all come through it.
TEST(SanitizeUtf8, InvalidBytesBecomeTheReplacementCharacterInEveryMode) {
  for (auto mode : {util::Controls::keep, util::Controls::drop, util::Controls::replace}) {
    EXPECT_EQ(util::sanitize_utf8("ok \xC3\xA9", mode), "ok \xC3\xA9");
    EXPECT_EQ(util::sanitize_utf8("bad \xff\xfe end", mode), "bad \xEF\xBF\xBD\xEF\xBF\xBD end");
    EXPECT_EQ(util::sanitize_utf8("cut \xE6\x97", mode), "cut \xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(util::sanitize_utf8("overlong \xC0\xAF", mode), "overlong \xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(util::sanitize_utf8("surrogate \xED\xA0\x80", mode),
              "surrogate \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  }
}

TEST(SanitizeUtf8, ControlsKeptDroppedOrReplaced) {
  const std::string in = "tab\tbell\x07 del\x7f nl\nend";
  EXPECT_EQ(util::sanitize_utf8(in, util::Controls::keep), in);
  EXPECT_EQ(util::valid_utf8(in), in);
  EXPECT_EQ(util::sanitize_utf8(in, util::Controls::drop), "tab\tbell del nlend");
  EXPECT_EQ(util::sanitize_utf8(in, util::Controls::replace),
            "tab bell\xEF\xBF\xBD del\xEF\xBF\xBD nl\xEF\xBF\xBD"
            "end");
  EXPECT_EQ(util::printable_line(in), util::sanitize_utf8(in, util::Controls::replace));
}

TEST(SanitizeUtf8, CutAtTheLimitOnACharacterBoundary) {
  EXPECT_EQ(util::sanitize_utf8(std::string(50, 'a'), util::Controls::drop, 10),
            std::string(10, 'a') + " [...]");
  EXPECT_EQ(util::sanitize_utf8(std::string(10, 'a'), util::Controls::drop, 10),
            std::string(10, 'a'));
  // "é" is two bytes: the cut comes after a whole character, never inside one.
  EXPECT_EQ(util::sanitize_utf8("a\xC3\xA9\xC3\xA9", util::Controls::keep, 2), "a\xC3\xA9 [...]");
}

TEST(SafeFileComponent, NeverEmptyNeverHidden) {
  EXPECT_EQ(util::safe_file_component("llama ft/v2"), "llama_ft_v2");
  EXPECT_EQ(util::safe_file_component(""), "job");
  EXPECT_EQ(util::safe_file_component("..x"), "_.x");
  EXPECT_EQ(util::safe_file_component(std::string(300, 'a')).size(), 64u);
}

TEST(HumanDuration, Compact) {
  EXPECT_EQ(util::human_duration(2 * 3600 + 13 * 60 + 5), "2h13m");
  EXPECT_EQ(util::human_duration(185), "3m05s");
  EXPECT_EQ(util::human_duration(0.5), "0.5s");
}

TEST(CountNewlines, MatchesAPlainCountAtEveryLengthAndAlignment) {
  std::string text;
  uint32_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 1103515245u + 12345u;
    // Mostly '\n' and bytes that differ from it by one bit, to catch a wrong compare.
    const char choices[] = {'\n', '\n', 'a', '\x0b', '\x8a', '\x0e', ' ', '\xff'};
    text.push_back(choices[(x >> 16) % 8]);
  }
  for (size_t start = 0; start < 40; ++start) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{31}, size_t{33},
                       size_t{255 * 32 + 7}, size_t{9000}, text.size() - start}) {
      std::string_view v(text.data() + start, std::min(len, text.size() - start));
      EXPECT_EQ(util::count_newlines(v),
                static_cast<uint64_t>(std::count(v.begin(), v.end(), '\n')))
          << start << " " << len;
    }
  }
  // More than 255 rounds of all-'\n' input: the per-byte counters must not wrap.
  std::string all(100000, '\n');
  EXPECT_EQ(util::count_newlines(all), 100000u);
}

TEST(StripAnsi, ColourCursorTitleHyperlinkAndCharsetSequences) {
  std::string scratch;
  auto strip = [&](std::string_view in) { return std::string(util::strip_ansi(in, scratch)); };
  EXPECT_EQ(strip("plain"), "plain");
  EXPECT_EQ(strip("\x1b[31mRuntimeError\x1b[0m: CUDA out\x1b[1;33m of memory"),
            "RuntimeError: CUDA out of memory");
  EXPECT_EQ(strip("\x1b]0;title\x07text\x1b[K"), "text");
  EXPECT_EQ(strip("end\x1b"), "end");
  EXPECT_EQ(strip("\x1b[1;31mError\x1b[0m: x"), "Error: x");
  EXPECT_EQ(strip("a\x1b[2Kb\x1b[1Ac"), "abc");
  EXPECT_EQ(strip("\x1b]0;title\x07text"), "text");
  EXPECT_EQ(strip("\x1b]8;;http://x\x1b\\link"), "link");
  EXPECT_EQ(strip("\x1b(Bplain"), "plain");
}

TEST(Username, LoginVariablesFirstThenPasswd) {
  util::ScopedEnv logname("LOGNAME", "alice");
  util::ScopedEnv user("USER", "bob");
  EXPECT_EQ(util::username(), "alice");
  logname.set("");
  EXPECT_EQ(util::username(), "bob");
  logname.set(std::nullopt);
  user.set(std::nullopt);
  const std::string from_passwd = util::username();
  EXPECT_FALSE(from_passwd.empty());
  // The files source alone: what getpwuid answers for a user listed in /etc/passwd.
  auto text = util::read_file("/etc/passwd");
  auto listed = text ? util::passwd_name(*text, ::geteuid()) : std::nullopt;
  if (listed) {
    struct passwd* pw = ::getpwuid(::geteuid());
    ASSERT_NE(pw, nullptr);
    EXPECT_EQ(from_passwd, pw->pw_name);
  } else {
    EXPECT_EQ(from_passwd, "uid" + std::to_string(::geteuid()));
  }
}

TEST(Username, PasswdLinesParsed) {
  const std::string text =
      "# comment:x:1000:1000::/:/bin/sh\n"
      "root:x:0:0:root:/root:/bin/bash\n"
      "broken line without fields\n"
      "+nisuser:x:1000:1000::/:/bin/sh\n"
      ":x:1000:1000::/:/bin/sh\n"
      "alice:x:10000:100:Alice:/home/alice:/bin/bash\n"
      "alice2:x:1000:100::/home/alice2:/bin/bash\n"
      "bob:x:1000:100::/home/bob:/bin/bash\n"
      "carol:x:1001:100::/home/carol:/bin/bash";  // no final newline
  EXPECT_EQ(util::passwd_name(text, 0), "root");
  EXPECT_EQ(util::passwd_name(text, 1000), "alice2");  // the first listed, as getpwuid
  EXPECT_EQ(util::passwd_name(text, 10000), "alice");  // not a prefix match
  EXPECT_EQ(util::passwd_name(text, 1001), "carol");
  EXPECT_EQ(util::passwd_name(text, 100), std::nullopt);  // a gid, not a uid
  EXPECT_EQ(util::passwd_name("", 0), std::nullopt);
  EXPECT_EQ(util::passwd_name("root:x:0", 0), std::nullopt);  // too few fields
}

TEST(ReadFile, WholeFilesOfAnySizeAndProcFiles) {
  char dir_template[] = "/tmp/gpualert-readfile-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  for (size_t size : {0u, 1u, 4095u, 4096u, 4097u, 65536u, 200001u}) {
    std::string text(size, 'x');
    for (size_t i = 0; i < size; i += 97) {
      text[i] = static_cast<char>('a' + i % 26);
    }
    const std::string path = dir + "/f" + std::to_string(size);
    ASSERT_TRUE(util::write_file_atomic(path, text).ok());
    auto back = util::read_file(path);
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(*back, text) << size;
    ::unlink(path.c_str());
  }
  ::rmdir(dir.c_str());
  // /proc files say size 0 and still have content.
  auto status = util::read_file("/proc/self/status");
  ASSERT_TRUE(status.ok());
  EXPECT_NE(status->find("Name:"), std::string::npos);
  EXPECT_FALSE(util::read_file(dir + "/missing").ok());
}

TEST(MakeDirs, NestedExistingAndInTheWay) {
  char dir_template[] = "/tmp/gpualert-mkdirs-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  struct stat st {};
  // Three missing levels, a trailing slash, then again (exists: fine).
  ASSERT_TRUE(util::make_dirs(dir + "/a/b/c/", 0700).ok());
  ASSERT_EQ(::stat((dir + "/a/b/c").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(util::make_dirs(dir + "/a/b/c", 0700).ok());
  EXPECT_TRUE(util::make_dirs(dir + "/a/b/d", 0755).ok());
  // A file where a directory should be, at the end or on the way.
  ASSERT_TRUE(util::write_file_atomic(dir + "/f", "x").ok());
  auto at_end = util::make_dirs(dir + "/f", 0700);
  ASSERT_FALSE(at_end.ok());
  EXPECT_NE(at_end.error().find("not a directory"), std::string::npos) << at_end.error();
  auto on_the_way = util::make_dirs(dir + "/f/g/h", 0700);
  ASSERT_FALSE(on_the_way.ok());
  EXPECT_NE(on_the_way.error().find(dir + "/f"), std::string::npos) << on_the_way.error();
  // Relative, from the current directory.
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  EXPECT_TRUE(util::make_dirs("r/s", 0700).ok());
  ASSERT_EQ(::chdir(cwd), 0);
  EXPECT_EQ(::stat((dir + "/r/s").c_str(), &st), 0);
  EXPECT_FALSE(util::make_dirs("", 0700).ok());
  for (const char* sub : {"/a/b/c", "/a/b/d", "/a/b", "/a", "/r/s", "/r"}) {
    ::rmdir((dir + sub).c_str());
  }
  ::unlink((dir + "/f").c_str());
  ::rmdir(dir.c_str());
}

TEST(ReadFile, SizeZeroWithMoreThanOneProbeOfContent) {
  // A pipe says size 0, like /proc, and holds more than the first small read.
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::string text(150001, 'y');
  for (size_t i = 0; i < text.size(); i += 89) {
    text[i] = static_cast<char>('a' + i % 26);
  }
  std::thread writer([&] {
    size_t off = 0;
    while (off < text.size()) {
      ssize_t n = ::write(p[1], text.data() + off, text.size() - off);
      if (n <= 0) {
        break;
      }
      off += static_cast<size_t>(n);
    }
    ::close(p[1]);
  });
  auto back = util::read_file("/proc/self/fd/" + std::to_string(p[0]));
  writer.join();
  ::close(p[0]);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, text);
}

TEST(SplitLines, LastPieceOnlyIfNotEmpty) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(util::split_lines("a\nb"), (V{"a", "b"}));
  EXPECT_EQ(util::split_lines("a\nb\n"), (V{"a", "b"}));
  EXPECT_EQ(util::split_lines("\n\nx"), (V{"", "", "x"}));
  EXPECT_EQ(util::split_lines(""), V{});
  EXPECT_EQ(util::split_lines("a\r\n"), (V{"a\r"}));  // '\r' is the caller's
}

TEST(Base64, RoundTripsEveryLengthAndRejectsGarbage) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes += static_cast<char>(i * 37);
    auto enc = util::base64_encode(bytes);
    EXPECT_EQ(enc.size() % 4, 0u);
    auto dec = util::base64_decode(enc);
    ASSERT_TRUE(dec.has_value());
    EXPECT_EQ(*dec, bytes);
  }
  EXPECT_EQ(util::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(util::base64_encode("fo"), "Zm8=");
  EXPECT_FALSE(util::base64_decode("Zm9").has_value());
  EXPECT_FALSE(util::base64_decode("Zm=v").has_value());
  EXPECT_FALSE(util::base64_decode("Z!9v").has_value());
}

TEST(ValidUtf8, ReplacesOnlyBadBytes) {
  EXPECT_TRUE(util::is_valid_utf8("café"));
  EXPECT_FALSE(util::is_valid_utf8("caf\xe9"));
  EXPECT_EQ(util::valid_utf8("caf\xe9!"), "caf\xef\xbf\xbd!");
}

TEST(ParseIso8601, EveryOffsetFormAndRoundTripsLocalTime) {
  // 2026-12-01T21:57:16Z is 1796162236 s after the epoch.
  EXPECT_EQ(util::parse_iso8601("2026-12-01T21:57:16+00:00"), 1796162236);
  EXPECT_EQ(util::parse_iso8601("2026-12-01T21:57:16Z"), 1796162236);
  EXPECT_EQ(util::parse_iso8601("2026-12-01T21:57:16"), 1796162236);
  EXPECT_EQ(util::parse_iso8601("2026-12-01T22:57:16.250+01:00"), 1796162236);
  EXPECT_EQ(util::parse_iso8601("2026-12-01T16:27:16-0530"), 1796162236);
  const std::time_t now = std::time(nullptr);
  EXPECT_EQ(util::parse_iso8601(util::iso8601_local(now)), now);
  for (const char* bad :
       {"", "yesterday", "2026-12-01", "2026-13-01T00:00:00Z", "2026-12-01T21:57:16+1",
        "2026-12-01T21:57:16 UTC", "2026-12-01T21:57:16+01:00x"}) {
    EXPECT_EQ(util::parse_iso8601(bad), std::nullopt) << bad;
  }
}
