#include "util/signals.hpp"

#include <gtest/gtest.h>

#include <csignal>

TEST(Signals, EveryNumberHasANameThatReadsBack) {
  for (int sig = 1; sig < NSIG; ++sig) {
    std::string name = util::signal_name(sig);
    EXPECT_EQ(util::signal_number(name), sig) << name;
  }
  EXPECT_EQ(util::signal_name(SIGPROF), "SIGPROF");
  EXPECT_EQ(util::signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(util::signal_name(SIGRTMIN + 2), "SIGRTMIN+2");
}

TEST(Signals, UsualSpellings) {
  EXPECT_EQ(util::signal_number("term"), SIGTERM);
  EXPECT_EQ(util::signal_number("SIGKILL"), SIGKILL);
  EXPECT_EQ(util::signal_number("9"), SIGKILL);
  EXPECT_EQ(util::signal_number("PROF"), SIGPROF);
  EXPECT_EQ(util::signal_number("SIGIOT"), SIGABRT);
  EXPECT_EQ(util::signal_number("RTMAX-1"), SIGRTMAX - 1);
  EXPECT_EQ(util::signal_number("SIGRTMIN"), SIGRTMIN);
  EXPECT_EQ(util::signal_number("SIGNOPE"), 0);
  EXPECT_EQ(util::signal_number("0"), 0);
  EXPECT_EQ(util::signal_number("999"), 0);
  EXPECT_EQ(util::signal_number("RTMIN+999"), 0);
  EXPECT_EQ(util::signal_description(SIGSEGV), "Segmentation fault");
}
