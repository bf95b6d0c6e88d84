#include "capture/log_sink.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

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
