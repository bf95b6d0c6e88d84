#include "capture/log_sink.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "util/fd.hpp"

TEST(LogSink, FullDeviceIsCountedNotFatal) {
  util::UniqueFd full(::open("/dev/full", O_WRONLY));
  ASSERT_TRUE(full.valid());
  capture::LogSink sink(std::move(full), "/dev/full", {}, std::chrono::milliseconds(20));
  sink.append("first line\n");
  sink.append("second line\n");
  sink.close();
  ASSERT_TRUE(sink.first_error().has_value());
  EXPECT_NE(sink.first_error()->find("No space left on device"), std::string::npos);
  EXPECT_EQ(sink.lost_bytes(), 23u);
  EXPECT_EQ(sink.job_bytes(), 23u);
}

TEST(LogSink, WrapperLinesStartOnTheirOwnLine) {
  char tmpl[] = "/tmp/gpualert-sink-XXXXXX";
  int fd = ::mkstemp(tmpl);
  {
    capture::LogSink sink(util::UniqueFd(fd), tmpl, {}, std::chrono::milliseconds(20));
    sink.append("no newline at the end");
    sink.append_wrapper_lines("#gpualert# footer\n");
    sink.close();
    EXPECT_EQ(sink.job_bytes(), 21u);
  }
  auto text = util::read_file(tmpl);
  ::unlink(tmpl);
  EXPECT_EQ(*text, "no newline at the end\n#gpualert# footer\n");
}

TEST(LogSink, WithoutTheSyncThreadCloseStillWritesAndSyncsEverything) {
  // A short job's sink never starts its thread: close() makes the last fdatasync.
  // Started after closing began, the thread is not started at all.
  char tmpl[] = "/tmp/gpualert-sink-XXXXXX";
  int fd = ::mkstemp(tmpl);
  {
    capture::LogSink sink(util::UniqueFd(fd), tmpl, {}, std::chrono::milliseconds(20));
    sink.append("step 1\n");
    sink.finish_writing();
    sink.start_syncing();
    EXPECT_TRUE(sink.closed());
    sink.close();
    sink.close();  // idempotent
  }
  auto text = util::read_file(tmpl);
  ::unlink(tmpl);
  EXPECT_EQ(*text, "step 1\n");
}

TEST(LogSink, OneSyncThreadFromStartSyncingUntilClose) {
  auto threads = [] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
      (void)e;
      ++n;
    }
    return n;
  };
  char tmpl[] = "/tmp/gpualert-sink-XXXXXX";
  int fd = ::mkstemp(tmpl);
  // Threads of earlier tests in this process may still be on their way out.
  for (int i = 0; i < 200 && threads() != 1; ++i) {
    ::usleep(5000);
  }
  const int before = threads();
  {
    capture::LogSink sink(util::UniqueFd(fd), tmpl, {}, std::chrono::milliseconds(5));
    sink.append("step 0\n");
    EXPECT_EQ(threads(), before);  // none until asked for
    sink.start_syncing();
    sink.start_syncing();  // idempotent
    EXPECT_EQ(threads(), before + 1);
    sink.append("step 1\n");
    sink.close();
    // The joined thread leaves /proc/self/task a moment after pthread_join returns
    // (the kernel clears the tid before it releases the task).
    for (int i = 0; i < 200 && threads() != before; ++i) {
      ::usleep(5000);
    }
    EXPECT_EQ(threads(), before);
  }
  auto text = util::read_file(tmpl);
  ::unlink(tmpl);
  EXPECT_EQ(*text, "step 0\nstep 1\n");
}
