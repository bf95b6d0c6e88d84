#include "host/scheduler.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace {

// `scontrol show job --oneliner` as Slurm 22.05 printed it here, at the SIGTERM of a
// job that reached its time limit and of one that was scancelled (shortened).
constexpr const char* k_at_time_limit =
    "JobId=1 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
    "Nice=0 Account=(null) QOS=(null) JobState=COMPLETING Reason=TimeLimit Dependency=(null) "
    "Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:01:27 "
    "TimeLimit=00:01:00 TimeMin=N/A SubmitTime=2026-11-30T03:23:01\n";
constexpr const char* k_at_scancel =
    "JobId=2 JobName=t.sh UserId=root(0) JobState=COMPLETING Reason=None Dependency=(null) "
    "RunTime=00:00:02 TimeLimit=00:05:00 TimeMin=N/A\n";

TEST(SlurmState, TheStateReasonAndTimesOfTheJob) {
  EXPECT_EQ(host::slurm_state_line(k_at_time_limit, "1"),
            "scontrol: job 1 JobState=COMPLETING Reason=TimeLimit RunTime=00:01:27 "
            "TimeLimit=00:01:00");
  EXPECT_EQ(host::slurm_state_line(k_at_scancel, "2"),
            "scontrol: job 2 JobState=COMPLETING Reason=None RunTime=00:00:02 TimeLimit=00:05:00");
  EXPECT_FALSE(host::slurm_state_line("slurm_load_jobs error: Invalid job id specified\n", "9"));
  // TimeMin= is not TimeLimit=, nor is a value that merely contains the key.
  EXPECT_EQ(host::slurm_state_line("JobState=RUNNING TimeMin=N/A Comment=Reason=x", "3"),
            "scontrol: job 3 JobState=RUNNING");
}

TEST(SlurmState, RestartsAndOutputFilesAreRead) {
  auto job = host::parse_slurm_job(
      "JobId=5 JobState=PENDING Reason=BeginTime Requeue=1 Restarts=2 ExitCode=0:15 "
      "RunTime=00:00:00 TimeLimit=UNLIMITED StdErr=/tmp/x/slurm-5.out StdOut=/tmp/x/slurm-5.out\n",
      "5");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->restarts, 2);
  EXPECT_EQ(job->exit_code, "0:15");
  EXPECT_EQ(job->std_err, "/tmp/x/slurm-5.out");
  EXPECT_EQ(job->line,
            "scontrol: job 5 JobState=PENDING Reason=BeginTime RunTime=00:00:00 "
            "TimeLimit=UNLIMITED Restarts=2");
}

TEST(SlurmState, TheBannerOfThisJobIsTakenFromItsOutputFile) {
  char tmpl[] = "/tmp/gpualert-banner-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string out = dir + "/slurm-7.out";
  std::ofstream(out)
      << "step 1\n"
         "slurmstepd: error: *** JOB 17 ON n1 CANCELLED AT 2026-01-01T00:00:00 ***\n"
         "step 2\n"
         "slurmstepd-n1: error: *** JOB 7 ON n1 CANCELLED AT 2026-12-01T21:58:14 DUE "
         "TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n"
         "got signal 15\n";
  EXPECT_EQ(host::slurmstepd_banner(out, "7"),
            "slurmstepd-n1: error: *** JOB 7 ON n1 CANCELLED AT 2026-12-01T21:58:14 DUE TO NODE "
            "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***");
  EXPECT_FALSE(host::slurmstepd_banner(out, "8"));
  EXPECT_FALSE(host::slurmstepd_banner(dir, "7"));  // not a regular file
  host::SlurmJob job;
  job.id = "7";
  job.line = "scontrol: job 7 JobState=PENDING Reason=None Restarts=1";
  job.restarts = 1;
  auto lines = host::slurm_evidence(job, 0, out);  // no StdErr from scontrol: our own stderr
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("DUE TO NODE FAILURE"), std::string::npos);
  EXPECT_EQ(lines[2],
            "scontrol: job 7 was requeued (Restarts=1): this was run 1 of it, and it "
            "will run again");
  EXPECT_EQ(host::requeued_run(lines[2]), 1);
  EXPECT_FALSE(host::requeued_run(lines[0]));
  // Run 2 of a job that had been requeued once before, and not again: no requeue line.
  EXPECT_EQ(host::slurm_evidence(job, 1, "").size(), 1u);
  ::unlink(out.c_str());
  ::rmdir(dir.c_str());
}

// A directory put first on PATH with an executable `scontrol` in it.
struct FakePath {
  std::string dir, old_path;
  explicit FakePath(const std::string& script) {
    char tmpl[] = "/tmp/gpualert-scontrol-XXXXXX";
    dir = ::mkdtemp(tmpl);
    std::ofstream(dir + "/scontrol") << script;
    ::chmod((dir + "/scontrol").c_str(), 0755);
    old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir + ":" + old_path).c_str(), 1);
  }
  ~FakePath() {
    ::setenv("PATH", old_path.c_str(), 1);
    ::unlink((dir + "/scontrol").c_str());
    ::rmdir(dir.c_str());
  }
};

TEST(SlurmState, AnUnansweredQueryIsGivenUpAtTheDeadline) {
  // A controller that does not answer: scontrol hangs; the query gives up and kills it.
  FakePath path("#!/bin/sh\nexec sleep 30\n");
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(host::query_slurm_job_state("77", std::chrono::milliseconds(300)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(SlurmState, AQueryThatClosesItsOutputAndHangsIsGivenUpToo) {
  FakePath path("#!/bin/sh\nexec >/dev/null\nexec sleep 30\n");
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(host::query_slurm_job_state("77", std::chrono::milliseconds(300)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(SlurmState, ItsOutputIsReadAndAFailureIsNothing) {
  {
    FakePath path(std::string("#!/bin/sh\n[ \"$4\" = 12 ] && printf '%s' '") + k_at_scancel +
                  "'\n");
    EXPECT_EQ(host::query_slurm_job_state("12", std::chrono::seconds(5)),
              "scontrol: job 12 JobState=COMPLETING Reason=None RunTime=00:00:02 "
              "TimeLimit=00:05:00");
  }
  {
    FakePath path("#!/bin/sh\necho 'JobState=RUNNING'\nexit 1\n");
    EXPECT_FALSE(host::query_slurm_job_state("12", std::chrono::seconds(5)));
  }
  // Not a job id: nothing is run.
  EXPECT_FALSE(host::query_slurm_job_state("12; rm -rf /", std::chrono::seconds(5)));
  EXPECT_FALSE(host::query_slurm_job_state("", std::chrono::seconds(5)));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(SlurmComment, ScontrolGetsTheJobAndTheCleanedCommentAsTwoArguments) {
  FakePath path("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$0.argv\"\n");
  auto write = host::start_comment_write(
      "4242", "gpualert: script_error rank 1: ValueError: bad \"shape\"\n  at `x`",
      std::chrono::seconds(10));
  ASSERT_TRUE(write.running());
  EXPECT_TRUE(write.finish());
  EXPECT_EQ(slurp(path.dir + "/scontrol.argv"),
            "update\nJobId=4242\nComment=gpualert: script_error rank 1: ValueError: bad 'shape' "
            "at 'x'\n");
  ::unlink((path.dir + "/scontrol.argv").c_str());
}

TEST(SlurmComment, AFailedScontrolIsReportedAndNotAJobIdIsNotRun) {
  FakePath path("#!/bin/sh\necho 'Access/permission denied' >&2\nexit 1\n");
  EXPECT_FALSE(
      host::start_comment_write("4242", "gpualert: success", std::chrono::seconds(10)).finish());
  EXPECT_FALSE(host::start_comment_write("42; rm -rf /", "x", std::chrono::seconds(10)).running());
  EXPECT_FALSE(host::start_comment_write("", "x", std::chrono::seconds(10)).running());
}

TEST(SlurmComment, AHangingScontrolIsKilledAtTheDeadline) {
  FakePath path("#!/bin/sh\necho $$ > \"$0.pid\"\nexec sleep 30\n");
  auto write =
      host::start_comment_write("7", "gpualert: cuda_oom", std::chrono::milliseconds(1000));
  ASSERT_TRUE(write.running());
  EXPECT_FALSE(write.finish());
  std::string pid_text = slurp(path.dir + "/scontrol.pid");
  ASSERT_FALSE(pid_text.empty()) << "scontrol never ran";
  pid_t pid = static_cast<pid_t>(std::stol(pid_text));
  // Killed and reaped: no such process any more (not even a zombie of ours).
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  ::unlink((path.dir + "/scontrol.pid").c_str());
}

TEST(SlurmComment, TheTextIsOneLineOfAtMost120Bytes) {
  EXPECT_EQ(host::slurm_comment_text("a\r\nb\t\"c\"  "), "a b 'c'");
  std::string cause = "gpualert: cuda_oom: " + std::string(200, 'x');
  std::string cut = host::slurm_comment_text(cause);
  EXPECT_EQ(cut.size(), 120u);
  EXPECT_EQ(cut.substr(117), "...");
  // A cut never splits a UTF-8 sequence.
  std::string accents;
  for (int i = 0; i < 80; ++i) {
    accents += "\xc3\xa9";
  }
  std::string cut2 = host::slurm_comment_text(accents);
  EXPECT_LE(cut2.size(), 120u);
  EXPECT_EQ(cut2.substr(cut2.size() - 5), "\xc3\xa9...");
}

}  // namespace
