#include "cli/job_env.hpp"

#include <gtest/gtest.h>

namespace cli {
namespace {

std::vector<std::string> env_of(std::vector<std::string> entries, bool line_buffer,
                                const std::string& run_dir = "/runs/r1") {
  std::vector<char*> envp;
  for (auto& e : entries) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  return job_environment(envp.data(), line_buffer, run_dir);
}

std::vector<std::string> entries_named(const std::vector<std::string>& env,
                                       const std::string& key) {
  std::vector<std::string> out;
  for (const auto& kv : env) {
    if (kv.rfind(key + "=", 0) == 0) {
      out.push_back(kv.substr(key.size() + 1));
    }
  }
  return out;
}

TEST(JobEnvironment, KeepsEverythingInOrderAndAddsTheRunDir) {
  auto env = env_of({"PATH=/bin", "HOME=/home/u", "ODD_NO_EQUALS", "EMPTY="}, false);
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "HOME=/home/u", "ODD_NO_EQUALS",
                                           "EMPTY=", "GPUALERT_RUN_DIR=/runs/r1"}));
  EXPECT_EQ(env_of({"PATH=/bin"}, false, ""), (std::vector<std::string>{"PATH=/bin"}));
}

TEST(JobEnvironment, OurRunDirReplacesAnInheritedOneEvenWhenRepeated) {
  // A nested `gpualert run` inherits the outer run's variable; some environments
  // repeat a name, and runtimes differ in which entry they read.
  auto env = env_of({"GPUALERT_RUN_DIR=/outer", "A=1", "GPUALERT_RUN_DIR=/outer2"}, false);
  EXPECT_EQ(entries_named(env, "GPUALERT_RUN_DIR"), (std::vector<std::string>{"/runs/r1"}));
  EXPECT_EQ(env.front(), "GPUALERT_RUN_DIR=/runs/r1");  // in the place it was
  EXPECT_EQ(env.size(), 2u);
}

TEST(JobEnvironment, NameMatchIsExactNotAPrefix) {
  auto env = env_of({"LD_PRELOAD_X=keep", "PYTHONUNBUFFEREDX=1"}, true);
  EXPECT_EQ(entries_named(env, "LD_PRELOAD_X"), (std::vector<std::string>{"keep"}));
  EXPECT_EQ(entries_named(env, "PYTHONUNBUFFERED"), (std::vector<std::string>{"1"}));
}

TEST(JobEnvironment, LineBufferingHints) {
  auto env = env_of({"PATH=/bin"}, true);
  EXPECT_EQ(entries_named(env, "PYTHONUNBUFFERED"), (std::vector<std::string>{"1"}));
  std::string lib = find_stdbuf_library();
  if (lib.empty()) {
    EXPECT_TRUE(entries_named(env, "LD_PRELOAD").empty());
    GTEST_SKIP() << "no coreutils libstdbuf.so here: the preload part is not checked";
  }
  EXPECT_EQ(entries_named(env, "LD_PRELOAD"), (std::vector<std::string>{lib}));
  EXPECT_EQ(entries_named(env, "_STDBUF_O"), (std::vector<std::string>{"L"}));
}

TEST(JobEnvironment, NoHintsWithoutLineBuffering) {
  auto env = env_of({"PATH=/bin"}, false);
  EXPECT_TRUE(entries_named(env, "PYTHONUNBUFFERED").empty());
  EXPECT_TRUE(entries_named(env, "LD_PRELOAD").empty());
  EXPECT_TRUE(entries_named(env, "_STDBUF_O").empty());
}

TEST(JobEnvironment, TheUsersOwnSettingsWin) {
  // PYTHONUNBUFFERED set (even to 0 or empty) is the user's choice; so is _STDBUF_O
  // (they ran under stdbuf already): neither is touched.
  auto env = env_of({"PYTHONUNBUFFERED=", "_STDBUF_O=0", "LD_PRELOAD=/opt/a.so"}, true);
  EXPECT_EQ(entries_named(env, "PYTHONUNBUFFERED"), (std::vector<std::string>{""}));
  EXPECT_EQ(entries_named(env, "_STDBUF_O"), (std::vector<std::string>{"0"}));
  EXPECT_EQ(entries_named(env, "LD_PRELOAD"), (std::vector<std::string>{"/opt/a.so"}));
}

TEST(JobEnvironment, StdbufIsAddedAfterTheUsersPreloads) {
  std::string lib = find_stdbuf_library();
  if (lib.empty()) {
    GTEST_SKIP() << "no coreutils libstdbuf.so here";
  }
  auto env = env_of({"LD_PRELOAD=/opt/a.so:/opt/b.so", "X=1"}, true);
  EXPECT_EQ(entries_named(env, "LD_PRELOAD"),
            (std::vector<std::string>{"/opt/a.so:/opt/b.so:" + lib}));
  EXPECT_EQ(env.front(), "LD_PRELOAD=/opt/a.so:/opt/b.so:" + lib);
  // An empty LD_PRELOAD is no preload: ours alone, without a leading ':'.
  env = env_of({"LD_PRELOAD="}, true);
  EXPECT_EQ(entries_named(env, "LD_PRELOAD"), (std::vector<std::string>{lib}));
}

}  // namespace
}  // namespace cli
