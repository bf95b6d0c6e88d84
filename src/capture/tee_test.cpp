#include "capture/tee.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "util/fd.hpp"

namespace {

struct TempFile {
  std::string path;
  TempFile() {
    char tmpl[] = "/tmp/gpualert-tee-XXXXXX";
    ::close(::mkstemp(tmpl));
    path = tmpl;
  }
  ~TempFile() { ::unlink(path.c_str()); }
};

struct Pipe {
  util::UniqueFd r, w;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
};

TEST(SameDestination, OneOpenFileIsOneDestinationTwoPlacesAreTwo) {
  Pipe a, b;
  util::UniqueFd dup(::dup(a.w.get()));
  EXPECT_TRUE(capture::same_destination(a.w.get(), dup.get()));
  EXPECT_FALSE(capture::same_destination(a.w.get(), b.w.get()));

  TempFile f;
  util::UniqueFd one(::open(f.path.c_str(), O_WRONLY));
  util::UniqueFd one_dup(::dup(one.get()));
  util::UniqueFd two(::open(f.path.c_str(), O_WRONLY));  // `> f 2> f`: two offsets
  EXPECT_TRUE(capture::same_destination(one.get(), one_dup.get()));
  EXPECT_FALSE(capture::same_destination(one.get(), two.get()));
  util::UniqueFd app1(::open(f.path.c_str(), O_WRONLY | O_APPEND));
  util::UniqueFd app2(::open(f.path.c_str(), O_WRONLY | O_APPEND));  // `>> f 2>> f`
  EXPECT_TRUE(capture::same_destination(app1.get(), app2.get()));
  EXPECT_FALSE(capture::same_destination(one.get(), app1.get()));
}

TEST(Tee, AStalledTerminalHoldsBackNeitherTheLogNorTheCopy) {
  ::signal(SIGPIPE, SIG_IGN);
  TempFile log;
  capture::LogSink sink(util::UniqueFd(::open(log.path.c_str(), O_WRONLY)), log.path, 0,
                        std::chrono::seconds(10));
  capture::Tee tee(sink, nullptr, std::chrono::milliseconds(0));  // stalled at once
  Pipe job;                                                       // the job's stdout
  Pipe reader;  // our "terminal": nobody reads its read end
  // Blocking, as a terminal fd handed to us usually is: the Tee must not block on it.
  ::fcntl(reader.w.get(), F_SETFL, ::fcntl(reader.w.get(), F_GETFL) & ~O_NONBLOCK);
  size_t i = tee.add(std::move(job.r), reader.w.get());
  std::string chunk(64 * 1024, 'y');
  const size_t total = 3'000'000;
  size_t sent = 0;
  while (sent < total) {
    size_t n = std::min(chunk.size(), total - sent);
    ASSERT_EQ(util::write_all(job.w.get(), std::string_view(chunk.data(), n)).ok(), true);
    sent += n;
    while (tee.copy_once(i) > 1) {
    }
  }
  job.w.reset();
  while (tee.copy_once(i) > 0) {
  }
  EXPECT_TRUE(tee.all_eof());
  sink.close();
  struct stat st {};
  ASSERT_EQ(::stat(log.path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), total);
  EXPECT_EQ(tee.copied(), total);
  // The terminal took its pipe's capacity; at most the bounded buffer waits; the rest is counted.
  EXPECT_TRUE(tee.want_write(i));
  EXPECT_LE(tee.streams()[i].pending, capture::Tee::k_terminal_buffer);
  EXPECT_GT(tee.unshown(), total - capture::Tee::k_terminal_buffer - (1u << 20));
  // The reader's own description was left blocking: O_NONBLOCK is on ours only.
  EXPECT_EQ(::fcntl(reader.w.get(), F_GETFL) & O_NONBLOCK, 0);

  // The reader catches up: what waited is shown, in order.
  std::string got;
  char buf[65536];
  ::fcntl(reader.r.get(), F_SETFL, O_NONBLOCK);
  for (int k = 0; k < 100000; ++k) {
    ssize_t n = ::read(reader.r.get(), buf, sizeof buf);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
    }
    tee.flush_terminal(i);
    if (n <= 0 && !tee.want_write(i)) {
      break;
    }
  }
  EXPECT_FALSE(tee.want_write(i));
  EXPECT_EQ(got.find_first_not_of('y'), std::string::npos);
  // Every byte was either shown or counted as not shown.
  EXPECT_EQ(got.size() + tee.unshown(), total);
  EXPECT_GT(got.size(), capture::Tee::k_terminal_buffer / 2);
}

TEST(Tee, ASlowReaderSlowsTheJobAndSeesEveryByte) {
  // A reader that keeps reading, slower than the job prints: the terminal's ring
  // fills, and the job's pipe is then read only as fast as the terminal takes it.
  ::signal(SIGPIPE, SIG_IGN);
  TempFile log;
  capture::LogSink sink(util::UniqueFd(::open(log.path.c_str(), O_WRONLY)), log.path, 0,
                        std::chrono::seconds(10));
  capture::Tee tee(sink, nullptr, std::chrono::seconds(30));
  Pipe job, reader;
  ::fcntl(job.w.get(), F_SETFL, O_NONBLOCK);  // the test is the job: it must not block
  size_t i = tee.add(std::move(job.r), reader.w.get());
  ::fcntl(reader.r.get(), F_SETFL, O_NONBLOCK);
  std::string expected, got;
  for (int n = 0; expected.size() < 4'000'000; ++n) {
    expected += "step " + std::to_string(n) + " loss 0.25\n";
  }
  size_t sent = 0;
  char buf[4096];
  while (got.size() < expected.size()) {
    if (sent < expected.size()) {
      ssize_t w = ::write(job.w.get(), expected.data() + sent,
                          std::min<size_t>(64 * 1024, expected.size() - sent));
      sent += w > 0 ? static_cast<size_t>(w) : 0;
      if (sent == expected.size()) {
        job.w.reset();
      }
    }
    if (tee.want_read(i, capture::Tee::Clock::now())) {
      tee.copy_once(i);
    }
    tee.flush_terminal(i);
    ssize_t r = ::read(reader.r.get(), buf, sizeof buf);  // 4 KiB per round: slow
    got.append(buf, r > 0 ? static_cast<size_t>(r) : 0);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(tee.unshown(), 0u);
  EXPECT_EQ(tee.copied(), expected.size());
}

TEST(Tee, AReaderGoneClosesThePipeSoTheJobSeesItsBrokenPipe) {
  ::signal(SIGPIPE, SIG_IGN);
  TempFile log;
  capture::LogSink sink(util::UniqueFd(::open(log.path.c_str(), O_WRONLY)), log.path, 0,
                        std::chrono::seconds(10));
  std::string fed;
  capture::OutputFeed feed([&fed](std::string_view b) { fed.append(b); }, nullptr);
  capture::Tee tee(sink, &feed);
  Pipe job, reader;
  size_t i = tee.add(std::move(job.r), reader.w.get());
  reader.r.reset();
  ASSERT_TRUE(util::write_all(job.w.get(), "first\n").ok());
  EXPECT_EQ(tee.copy_once(i), 6u);
  EXPECT_TRUE(tee.all_eof());  // our read end is closed: the job's next write gets EPIPE
  EXPECT_TRUE(tee.notes().empty());
  feed.finish();
  EXPECT_EQ(fed, "first\n");  // diagnosis still got it
}

}  // namespace
