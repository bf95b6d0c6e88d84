// The supervisor's start_helpers hook, on real children: called once for a job that
// outlives helpers_after or prints helpers_after_bytes, never for one that ends sooner.
#include "supervise/supervisor.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>

#include "capture/log_sink.hpp"
#include "capture/tee.hpp"
#include "supervise/spawn.hpp"

namespace {

extern "C" char** environ;

struct Outcome {
  int helper_calls = 0;
  supervise::SuperviseResult result;
  uint64_t log_bytes = 0;
};

// Runs `sh -c script` under supervise() with its output in a pipe and the log on
// /dev/null, counting start_helpers calls.
Outcome supervise_script(const std::string& script, std::chrono::milliseconds after,
                         uint64_t after_bytes,
                         const std::function<void(supervise::SuperviseOptions&)>& tweak = {}) {
  auto intake = supervise::SignalIntake::open();
  EXPECT_TRUE(static_cast<bool>(intake));
  capture::LogSink sink(util::UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC)), "/dev/null", {},
                        std::chrono::seconds(10));
  capture::Tee tee(sink);
  int out[2];
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  util::UniqueFd out_w(out[1]);
  tee.add(util::UniqueFd(out[0]), -1);  // no terminal copy
  supervise::SpawnRequest req;
  req.argv = {"/bin/sh", "-c", script};
  for (char** e = environ; *e != nullptr; ++e) {
    req.env.emplace_back(*e);
  }
  req.stdout_fd = out_w.get();
  req.stderr_fd = 2;
  req.default_signals = &intake->child_defaults();
  auto spawned = supervise::spawn(req);
  out_w.reset();
  Outcome o;
  supervise::SuperviseOptions opt;
  opt.helpers_after = after;
  opt.helpers_after_bytes = after_bytes;
  opt.start_helpers = [&o] { ++o.helper_calls; };
  if (tweak) {
    tweak(opt);
  }
  o.result = supervise::supervise(std::get<supervise::Spawned>(spawned).pid, *intake, tee, opt);
  o.log_bytes = sink.job_bytes();
  sink.close();
  return o;
}

TEST(Supervisor, AShortJobNeverStartsTheHelpers) {
  auto o = supervise_script("echo one line", std::chrono::seconds(30), 1u << 20);
  EXPECT_EQ(o.helper_calls, 0);
  EXPECT_EQ(o.result.status.code, 0);
  EXPECT_EQ(o.log_bytes, 9u);
}

TEST(Supervisor, AJobThatGoesOnStartsThemOnce) {
  auto o =
      supervise_script("echo start; sleep 0.4; echo end", std::chrono::milliseconds(20), 1u << 20);
  EXPECT_EQ(o.helper_calls, 1);
  EXPECT_EQ(o.result.status.code, 0);
}

TEST(Supervisor, AJobPrintingInBulkStartsThemBeforeTheTime) {
  // 2 MiB printed at once: the byte threshold starts the helpers though the time
  // threshold (30 s) is never reached; the job then waits, so it is still running.
  auto o =
      supervise_script("head -c 2097152 /dev/zero; sleep 0.2", std::chrono::seconds(30), 1u << 20);
  EXPECT_EQ(o.helper_calls, 1);
  EXPECT_EQ(o.log_bytes, 2097152u);
}

TEST(Supervisor, TheWatchedFdIsReadWhileTheJobRuns) {
  // The job writes to a FIFO that the loop watches, then waits for the proof that
  // the loop read it (a file the callback makes): it exits 0 only if it was read
  // while the job was still running.
  char tmpl[] = "/tmp/gpualert-watch-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, fifo = dir + "/fifo", seen = dir + "/seen";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  util::UniqueFd r(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  util::UniqueFd w(
      ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));  // no EOF between writers
  ASSERT_TRUE(r.valid() && w.valid());
  std::string got;
  int calls = 0;
  auto o = supervise_script(
      "echo record > " + fifo + "; i=0; while [ ! -e " + seen +
          " ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; [ -e " + seen + " ]",
      std::chrono::seconds(30), 1u << 20, [&](supervise::SuperviseOptions& opt) {
        opt.watch_fd = r.get();
        opt.on_watch_readable = [&] {
          ++calls;
          char buf[64];
          for (ssize_t n; (n = ::read(r.get(), buf, sizeof buf)) > 0;) {
            got.append(buf, static_cast<size_t>(n));
          }
          std::ofstream(seen) << "";
        };
      });
  EXPECT_EQ(o.result.status.code, 0);
  EXPECT_EQ(got, "record\n");
  EXPECT_GE(calls, 1);
  std::system(("rm -rf " + dir).c_str());
}

TEST(Supervisor, AStallIsReportedOnceAndTheResumptionNoted) {
  // Silent for 1.5 s against a 200 ms --stall: one on_stall, the job left running,
  // and its later output noted as a resumption.
  int stalls = 0;
  auto o = supervise_script("echo start; sleep 1.5; echo end; sleep 1", std::chrono::seconds(30),
                            1u << 20, [&](supervise::SuperviseOptions& opt) {
                              opt.stall = std::chrono::milliseconds(200);
                              opt.on_stall = [&] { ++stalls; };
                            });
  EXPECT_EQ(stalls, 1);  // the second silence (after "end") is not reported again
  EXPECT_EQ(o.result.status.code, 0);
  ASSERT_TRUE(o.result.stalled_at_s.has_value());
  ASSERT_TRUE(o.result.resumed_at_s.has_value());
  EXPECT_GT(*o.result.resumed_at_s, *o.result.stalled_at_s);
  EXPECT_FALSE(o.result.stall_killed);
  ASSERT_FALSE(o.result.events.empty());
  EXPECT_NE(o.result.events[0].find("stalled: no output for"), std::string::npos);
}

TEST(Supervisor, AJobPrintingSteadilyNeverStalls) {
  int stalls = 0;
  auto o =
      supervise_script("i=0; while [ $i -lt 20 ]; do echo $i; sleep 0.05; i=$((i+1)); done",
                       std::chrono::seconds(30), 1u << 20, [&](supervise::SuperviseOptions& opt) {
                         opt.stall = std::chrono::seconds(5);
                         opt.on_stall = [&] { ++stalls; };
                       });
  EXPECT_EQ(stalls, 0);
  EXPECT_FALSE(o.result.stalled_at_s.has_value());
  EXPECT_EQ(o.result.status.code, 0);
}

TEST(Supervisor, StallKillEndsTheJobLikeTheTimeout) {
  // The job ignores SIGTERM: --stall-action kill's SIGTERM, then SIGKILL after kill_after.
  auto o = supervise_script("trap '' TERM; echo start; exec sleep 30", std::chrono::seconds(30),
                            1u << 20, [&](supervise::SuperviseOptions& opt) {
                              opt.stall = std::chrono::milliseconds(200);
                              opt.stall_kill = true;
                              opt.kill_after = std::chrono::milliseconds(300);
                            });
  EXPECT_TRUE(o.result.stall_killed);
  EXPECT_FALSE(o.result.wrapper_timeout);
  ASSERT_TRUE(o.result.status.signal.has_value());
  EXPECT_EQ(*o.result.status.signal, SIGKILL);
  ASSERT_EQ(o.result.events.size(), 2u);
  EXPECT_NE(o.result.events[0].find("sent SIGTERM"), std::string::npos);
  EXPECT_NE(o.result.events[1].find("stalled: still running"), std::string::npos);
}

}  // namespace
