#include "config/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace config {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpualert-config-XXXXXX";
    m_root = mkdtemp(tmpl);
    for (const char* v :
         {"GPUALERT_SMTP_URL", "GPUALERT_TO", "GPUALERT_CONFIG", "GPUALERT_NOTIFY_TIMEOUT",
          "GPUALERT_WEBHOOK_FORMAT", "GPUALERT_STATE_DIR"}) {
      unsetenv(v);
    }
    setenv("XDG_CONFIG_HOME", (m_root + "/xdg").c_str(), 1);
  }
  void TearDown() override {
    std::system(("rm -rf " + m_root).c_str());
    unsetenv("GPUALERT_SMTP_URL");
    unsetenv("GPUALERT_TO");
    unsetenv("GPUALERT_NOTIFY_TIMEOUT");
  }
  std::string file(const std::string& text) {
    std::string p = m_root + "/c.toml";
    std::ofstream(p) << text;
    return p;
  }
  std::string m_root;
};

TEST_F(ConfigTest, ReadsTheFile) {
  auto c = load_config(
      file("smtp_url = \"smtps://mail:465\"\nto = [\"a@x\", \"b@y\"]\nnotify_timeout = \"90s\"\n"
           "budget = \"1MiB\"\nwebhook_format = \"json\"\n"));
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->smtp_url, "smtps://mail:465");
  EXPECT_EQ(c->to, (std::vector<std::string>{"a@x", "b@y"}));
  EXPECT_EQ(c->notify_timeout, std::chrono::seconds(90));
  EXPECT_EQ(c->budget_bytes, 1u << 20);
  EXPECT_EQ(c->webhook_format, "json");
}

TEST_F(ConfigTest, EnvironmentOverridesTheFile) {
  setenv("GPUALERT_SMTP_URL", "smtp://env:25", 1);
  setenv("GPUALERT_TO", "x@y, z@w", 1);
  setenv("GPUALERT_NOTIFY_TIMEOUT", "5s", 1);
  auto c = load_config(file("smtp_url = \"smtp://file:25\"\nto = \"f@g\"\n"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->smtp_url, "smtp://env:25");
  EXPECT_EQ(c->to, (std::vector<std::string>{"x@y", "z@w"}));
  EXPECT_EQ(c->notify_timeout, std::chrono::seconds(5));
}

TEST_F(ConfigTest, SyntaxErrorNamesFileAndLine) {
  std::string p = file("smtp_url = \"x\"\n\nto = [\n");
  auto c = load_config(p);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind(p + ":", 0), 0u) << c.error();
}

TEST_F(ConfigTest, WrongTypeAndUnknownKeyNameFileAndLine) {
  std::string p = file("smtp_url = \"x\"\nnotify_timeout = true\n");
  auto c = load_config(p);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind(p + ":2:", 0), 0u) << c.error();
  p = file("\n\nsmtp_urll = \"x\"\n");
  c = load_config(p);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind(p + ":3:", 0), 0u) << c.error();
  EXPECT_NE(c.error().find("unknown key"), std::string::npos);
}

TEST_F(ConfigTest, GpuSamplingIntervalFromFileOrEnvironmentAndBadOnesNamed) {
  auto c = load_config(file("gpu_sample_seconds = 0\n"));
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->gpu_sample_seconds, 0u);
  c = load_config(file("gpu_sample_seconds = -1\n"));
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find(":1:"), std::string::npos) << c.error();
  setenv("GPUALERT_GPU_SAMPLE_SECONDS", "2", 1);
  c = load_config(file("gpu_sample_seconds = 30\n"));
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->gpu_sample_seconds, 2u);
  setenv("GPUALERT_GPU_SAMPLE_SECONDS", "5s", 1);
  c = load_config(file(""));
  unsetenv("GPUALERT_GPU_SAMPLE_SECONDS");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("GPUALERT_GPU_SAMPLE_SECONDS"), std::string::npos) << c.error();
}

TEST_F(ConfigTest, StallIsOffUnlessSetAndBadValuesAreNamed) {
  auto c = load_config(file(""));
  ASSERT_TRUE(c) << c.error();
  EXPECT_FALSE(c->stall.has_value());
  EXPECT_EQ(c->stall_action, "notify");
  c = load_config(file("stall = \"30m\"\nstall_action = \"kill\"\n"));
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c->stall.has_value());
  EXPECT_EQ(c->stall->count(), 30 * 60 * 1000);
  EXPECT_EQ(c->stall_action, "kill");
  c = load_config(file("stall = \"off\"\n"));
  ASSERT_TRUE(c) << c.error();
  EXPECT_FALSE(c->stall.has_value());
  c = load_config(file("\nstall_action = \"wait\"\n"));
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find(":2:"), std::string::npos) << c.error();
  c = load_config(file("stall = \"soon\"\n"));
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("stall"), std::string::npos) << c.error();
}

TEST_F(ConfigTest, MissingExplicitFileIsAnErrorMissingDefaultIsNot) {
  EXPECT_FALSE(load_config(m_root + "/nope.toml"));
  auto c = load_config("");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->source.empty());
}

TEST_F(ConfigTest, PasswordFileFirstLine) {
  std::ofstream(m_root + "/pw") << "s3cret\nignored\n";
  Config c;
  c.smtp_password_file = m_root + "/pw";
  EXPECT_EQ(*smtp_password(c), "s3cret");
  c.smtp_password_file = m_root + "/missing";
  EXPECT_FALSE(smtp_password(c));
}

TEST_F(ConfigTest, StateDirDefaults) {
  Config c;
  setenv("XDG_STATE_HOME", "/xs", 1);
  EXPECT_EQ(state_dir(c), "/xs/gpualert");
  EXPECT_EQ(outbox_dir(c), "/xs/gpualert/outbox");
  c.state_dir = "/explicit";
  EXPECT_EQ(state_dir(c), "/explicit");
  unsetenv("XDG_STATE_HOME");
}

// Issue: --config pointing at a directory or /dev/zero was read as an empty config.
TEST_F(ConfigTest, ConfigThatIsNotARegularFileIsAnError) {
  for (const std::string& path : {m_root, std::string("/dev/zero")}) {
    auto c = load_config(path);
    ASSERT_FALSE(c.ok()) << path;
    EXPECT_NE(c.error().find("not a regular file"), std::string::npos) << c.error();
  }
}

TEST(Recipients, SplitKeepsDisplayNamesWhole) {
  EXPECT_EQ(split_addresses("a@x.org, b@y.org;c@z.org d@w.org"),
            (std::vector<std::string>{"a@x.org", "b@y.org", "c@z.org", "d@w.org"}));
  EXPECT_EQ(split_addresses("\"Smith, Alice\" <a@x.org>, Bob Jones <b@y.org>"),
            (std::vector<std::string>{"\"Smith, Alice\" <a@x.org>", "Bob Jones <b@y.org>"}));
  EXPECT_EQ(split_addresses("ok@example.com, bad address"),
            (std::vector<std::string>{"ok@example.com", "bad address"}));
}

TEST(Recipients, BadOnesAreNamed) {
  EXPECT_TRUE(check_recipient("ok@example.com").ok());
  EXPECT_TRUE(check_recipient("Bob Jones <b@y.org>").ok());
  for (const char* bad : {"bad address", "nobody", "@x.org", "a@", "j\xf6rg@x.org", "a@b@c d",
                          "a@exa mple.com", "a@x..org", "<a@x.org> trailing"}) {
    auto st = check_recipient(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().find("is not an email address"), std::string::npos) << st.error();
  }
}

TEST_F(ConfigTest, BadRecipientInEnvironmentIsAnError) {
  setenv("GPUALERT_TO", "ok@example.com, bad address", 1);
  auto c = load_config("");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("GPUALERT_TO"), std::string::npos);
  EXPECT_NE(c.error().find("'bad address'"), std::string::npos) << c.error();
}

}  // namespace
}  // namespace config
