#include "cli/job_comment.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace {

report::RunReport failed_rank(const std::string& rank) {
  report::RunReport r;
  r.exit_code = 1;
  r.env = {{"SLURM_JOB_ID", "4242"}, {"SLURM_PROCID", rank}, {"SLURM_NTASKS", "2"}};
  model::Verdict v;
  v.label = "cuda_oom";
  v.evidence.push_back({0, "exit status 1", "exit"});
  v.evidence.push_back(
      {41, "  torch.OutOfMemoryError: CUDA out of memory (token hf_abcdefghijklmnopqrstuvwxyz0123)",
       "log"});
  r.verdict = v;
  return r;
}

report::RunReport succeeded(report::RunReport r) {
  r.exit_code = 0;
  r.verdict->label = "success";
  r.verdict->evidence.clear();
  return r;
}

TEST(JobComment, LabelRankAndTheDecisiveLineMasked) {
  EXPECT_EQ(cli::job_comment_text(failed_rank("3")),
            "gpualert: cuda_oom rank 3: torch.OutOfMemoryError: CUDA out of memory (token "
            "********)");
  EXPECT_EQ(cli::job_comment_text(succeeded(failed_rank("0"))), "gpualert: success");
}

// A fake scontrol first on PATH that records its arguments beside itself.
struct FakeScontrol {
  std::string dir, old_path;
  FakeScontrol() {
    char tmpl[] = "/tmp/gpualert-comment-XXXXXX";
    dir = ::mkdtemp(tmpl);
    std::ofstream(dir + "/scontrol") << "#!/bin/sh\nprintf '%s|' \"$@\" > \"$0.argv\"\n";
    ::chmod((dir + "/scontrol").c_str(), 0755);
    old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir + ":" + old_path).c_str(), 1);
  }
  std::string argv() {
    std::ifstream in(dir + "/scontrol.argv");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ::unlink((dir + "/scontrol.argv").c_str());
    return s;
  }
  ~FakeScontrol() {
    ::setenv("PATH", old_path.c_str(), 1);
    ::unlink((dir + "/scontrol.argv").c_str());
    ::unlink((dir + "/scontrol").c_str());
    ::rmdir(dir.c_str());
  }
};

TEST(JobComment, AFailingTaskWritesAHealthyTaskOfAManyTaskStepDoesNot) {
  FakeScontrol fake;
  config::Config config;
  EXPECT_TRUE(cli::start_job_comment(failed_rank("1"), config).finish());
  EXPECT_EQ(fake.argv(),
            "update|JobId=4242|Comment=gpualert: cuda_oom rank 1: "
            "torch.OutOfMemoryError: CUDA out of memory (token ********)|");
  // Rank 0 succeeding after rank 1 failed must not overwrite rank 1's cause.
  EXPECT_FALSE(cli::start_job_comment(succeeded(failed_rank("0")), config).running());
  // The only task of its job says it succeeded.
  report::RunReport alone = succeeded(failed_rank("0"));
  alone.env.erase("SLURM_NTASKS");
  EXPECT_TRUE(cli::start_job_comment(alone, config).finish());
  EXPECT_EQ(fake.argv(), "update|JobId=4242|Comment=gpualert: success|");
}

TEST(JobComment, NotInASlurmJobOrOptedOutNothingRuns) {
  FakeScontrol fake;
  config::Config config;
  report::RunReport outside = failed_rank("1");
  outside.env.erase("SLURM_JOB_ID");
  EXPECT_FALSE(cli::start_job_comment(outside, config).running());
  config.slurm_comment = false;
  EXPECT_FALSE(cli::start_job_comment(failed_rank("1"), config).running());
  EXPECT_EQ(fake.argv(), "");
}

}  // namespace
