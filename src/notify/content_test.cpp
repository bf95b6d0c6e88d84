#include "notify/content.hpp"

#include <gtest/gtest.h>

namespace notify {
namespace {

report::RunReport failed_run() {
  report::RunReport r;
  r.name = "llama-ft";
  r.host = "gpu-node17";
  r.duration_s = 2 * 3600 + 13 * 60 + 5;
  r.exit_code = 1;
  model::Verdict v;
  v.label = "cuda_oom";
  v.rule = "cuda-oom-torch";
  v.group = "gpu software";
  v.action = "smaller batch";
  r.verdict = v;
  return r;
}

TEST(Subject, FailedRunSaysVerdictFirst) {
  EXPECT_EQ(build_subject(failed_run()),
            "[gpualert] FAILED cuda_oom: llama-ft on gpu-node17 (exit 1 after 2h13m)");
}

TEST(Subject, SucceededRunSaysSo) {
  report::RunReport r = failed_run();
  r.exit_code = 0;
  r.verdict->label = "success";
  r.duration_s = 302;
  EXPECT_EQ(build_subject(r), "[gpualert] succeeded: llama-ft on gpu-node17 (exit 0 after 5m02s)");
  EXPECT_TRUE(is_success(r));
}

TEST(Subject, SignalDeathNamesTheSignal) {
  report::RunReport r = failed_run();
  r.exit_code.reset();
  r.signal = "SIGKILL";
  r.verdict->label = "host_oom";
  r.duration_s = 45;
  EXPECT_EQ(build_subject(r),
            "[gpualert] FAILED host_oom: llama-ft on gpu-node17 (killed by SIGKILL after 45s)");
}

TEST(Subject, ASuccessWithACaveatSaysSucceededBut) {
  report::RunReport r = failed_run();
  r.exit_code = 0;
  r.verdict->label = "success";
  r.verdict->caveats = {"NaN/Inf losses were logged (line 120)"};
  r.duration_s = 302;
  EXPECT_EQ(build_subject(r),
            "[gpualert] succeeded, but NaN/Inf losses were logged (line 120): llama-ft on "
            "gpu-node17 (exit 0 after 5m02s)");
}

TEST(Subject, WithoutVerdictExitStatusDecides) {
  report::RunReport r = failed_run();
  r.verdict.reset();
  EXPECT_EQ(build_subject(r), "[gpualert] FAILED: llama-ft on gpu-node17 (exit 1 after 2h13m)");
  r.exit_code = 0;
  EXPECT_TRUE(is_success(r));
  EXPECT_EQ(build_subject(r), "[gpualert] succeeded: llama-ft on gpu-node17 (exit 0 after 2h13m)");
}

TEST(Subject, JobNameCannotBreakTheHeaderLine) {
  report::RunReport r = failed_run();
  r.name = "x\r\nBcc: evil@example.com\nX-A: 1";
  std::string s = build_subject(r);
  EXPECT_EQ(s.find('\r'), std::string::npos);
  EXPECT_EQ(s.find('\n'), std::string::npos);
  EXPECT_EQ(s,
            "[gpualert] FAILED cuda_oom: x Bcc: evil@example.com X-A: 1 on gpu-node17 (exit 1 "
            "after 2h13m)");
}

TEST(Subject, SaysTheCauseInItsOwnWordsAndWhichJobRankAndArrayMember) {
  report::RunReport r = failed_run();
  r.verdict->evidence = {
      {0, "exit status 1", "exit"},
      {812,
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
       "total capacity of 79.15 GiB of which 1.2 GiB is free.",
       "log"}};
  r.env = {{"SLURM_JOB_ID", "4242"}, {"SLURM_PROCID", "3"}};
  EXPECT_EQ(build_subject(r),
            "[gpualert] FAILED cuda_oom: torch.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 2.00 GiB. GPU 3 has a tot... | job 4242 llama-ft rank 3 "
            "on gpu-node17 (exit 1 after 2h13m)");
  r.env = {{"SLURM_JOB_ID", "4243"},
           {"SLURM_ARRAY_JOB_ID", "4240"},
           {"SLURM_ARRAY_TASK_ID", "3"},
           {"SLURM_PROCID", "0"}};
  r.verdict->evidence[1].text = "KeyError: 'api_key=hf_abcdefghijklmnopqrstuvwxyz0123'";
  std::string s = build_subject(r);
  EXPECT_NE(s.find("| job 4240_3 llama-ft on gpu-node17"), std::string::npos) << s;
  EXPECT_EQ(s.find("hf_abcdefghijklmnop"), std::string::npos) << s;  // masked
}

TEST(Bodies, TheFirstScreenHasTheSchedulersFactsAndAnActionWithThem) {
  report::RunReport r = failed_run();
  r.verdict->label = "host_oom";
  r.verdict->action = "fewer loader workers, smaller prefetch, more host memory";
  r.env = {{"SLURM_JOB_ID", "4242"},       {"SLURM_JOB_NAME", "pretrain"},
           {"SLURM_JOB_PARTITION", "gpu"}, {"SLURM_JOB_NODELIST", "node[07-08]"},
           {"SLURM_MEM_PER_NODE", "200"},  {"SLURM_PROCID", "3"},
           {"SLURM_NTASKS", "8"},          {"SLURM_RESTART_COUNT", "1"}};
  r.scheduler_lines = {
      "scontrol: job 4242 JobState=OUT_OF_MEMORY Reason=OutOfMemory "
      "RunTime=01:02:03 TimeLimit=12:00:00"};
  EXPECT_EQ(first_action(r),
            "the job's --mem=200M limit was hit: ask for more memory (or fewer loader workers, a "
            "smaller prefetch); fewer loader workers, smaller prefetch, more host memory");
  r.cgroup_memory_peak = 209715200;
  Bodies b = build_bodies(r, LogExcerpt{}, {}, 0);
  EXPECT_NE(b.text.find("Scheduler: Job 4242 (pretrain); Partition gpu; Nodes node[07-08]; Task 3 "
                        "of 8; Run time 01:02:03 of 12:00:00; Memory asked (--mem) 200M; Memory "
                        "peak (its cgroup) 200.0 MiB; Restarts before this run 1\n"),
            std::string::npos)
      << b.text;
  // Before the evidence: on the first screen.
  EXPECT_LT(b.text.find("Scheduler:"), b.text.find("Run\n"));
  r.verdict->label = "time_limit";
  r.verdict->action = "checkpoint more often";
  EXPECT_EQ(first_action(r), "the job reached its 12:00:00 time limit: checkpoint more often");
}

TEST(Bodies, AnArrayMemberIsNamedByItsArrayId) {
  report::RunReport r = failed_run();
  r.env = {{"SLURM_JOB_ID", "21"}, {"SLURM_ARRAY_JOB_ID", "17"}, {"SLURM_ARRAY_TASK_ID", "1"}};
  Bodies b = build_bodies(r, LogExcerpt{}, {}, 0);
  EXPECT_NE(b.text.find("Scheduler job: array job 17_1\n"), std::string::npos) << b.text;
  EXPECT_EQ(b.text.find("SLURM_JOB_ID=21"), std::string::npos) << b.text;
}

TEST(Bodies, AGroupsNoticeSaysWhichRankAndListsTheOthers) {
  report::RunReport r = failed_run();
  r.env = {{"SLURM_JOB_ID", "4242"}, {"SLURM_PROCID", "1"}};
  r.job_group = nlohmann::json{{"key", "slurm-4242.0"},
                               {"noun", "task"},
                               {"rank", "1"},
                               {"size", 2},
                               {"role", "first_failure"},
                               {"others", {"task 0 on n0: still running; run dir /logs/a <b>"}}};
  Bodies b = build_bodies(r, LogExcerpt{}, {}, 0);
  EXPECT_NE(
      b.text.find("One notice for the job (2 tasks, group slurm-4242.0): task 1 failed "
                  "first.\nThe others:\n  task 0 on n0: still running; run dir /logs/a <b>\n"),
      std::string::npos)
      << b.text;
  EXPECT_NE(b.html.find("run dir /logs/a &lt;b&gt;</li>"), std::string::npos);
  EXPECT_NE(build_subject(r).find("job 4242 llama-ft rank 1 on"), std::string::npos);
  (*r.job_group)["role"] = "own";
  (*r.job_group)["own_why"] = "only 1 of the group's 2 tasks wrote to /d";
  EXPECT_NE(build_subject(r).find("rank 1 (own notice) on"), std::string::npos) << build_subject(r);
  b = build_bodies(r, LogExcerpt{}, {}, 0);
  EXPECT_NE(b.text.find("This is task 1's own notice: only 1 of the group's 2 tasks wrote to /d."),
            std::string::npos)
      << b.text;
}

TEST(Bodies, AnArrayDigestCountsLabelsAndListsTheFailingMembers) {
  report::RunReport r = failed_run();
  r.exit_code = 0;
  r.verdict->label = "success";
  r.env = {{"SLURM_JOB_ID", "21"}, {"SLURM_ARRAY_JOB_ID", "17"}, {"SLURM_ARRAY_TASK_ID", "2"}};
  r.array_digest = nlohmann::json{{"array_job_id", "17"},
                                  {"size", 4},
                                  {"failed", 1},
                                  {"labels", {{"script_error", 1}, {"success", 3}}},
                                  {"members",
                                   {{{"index", "0"}, {"label", "success"}, {"failed", false}},
                                    {{"index", "1"},
                                     {"label", "script_error"},
                                     {"failed", true},
                                     {"ending", "exit 1 after 2s"},
                                     {"cause", "ValueError: bad shard"},
                                     {"run_dir", "/logs/m1"}}}}};
  EXPECT_EQ(build_subject(r),
            "[gpualert] FAILED 1 of 4 members failed (script_error 1, success 3) | array job 17_* "
            "llama-ft on gpu-node17");
  Bodies b = build_bodies(r, LogExcerpt{}, {}, 0);
  EXPECT_NE(b.text.find("Array job 17: 1 of 4 members failed (script_error 1, success 3).\n"
                        "Failing members:\n  17_1: script_error (exit 1 after 2s): ValueError: "
                        "bad shard; run dir /logs/m1\n"),
            std::string::npos)
      << b.text;
  EXPECT_NE(b.html.find("#cf222e"), std::string::npos);  // red: the array failed
}

TEST(Bodies, HtmlIsEscapedAndSelfContained) {
  report::RunReport r = failed_run();
  r.command = "python train.py --tag '<b>bold</b>'";
  LogExcerpt ex;
  ex.tail = {"<script>alert(1)</script>"};
  Attachment a;
  a.name = "model.pt";
  a.path = "/w/model.pt";
  a.size = 3u << 30;
  a.note = "over budget: needs 3.0 GiB, 9.0 MiB left";
  Bodies b = build_bodies(r, ex, {a}, 10u << 20);
  EXPECT_EQ(b.html.find("<script>"), std::string::npos);
  EXPECT_NE(b.html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(b.html.find("<b>bold"), std::string::npos);
  EXPECT_EQ(b.html.find("src="), std::string::npos);
  EXPECT_EQ(b.html.find("<link"), std::string::npos);
  EXPECT_NE(b.text.find("model.pt  3.0 GiB  NOT attached: over budget"), std::string::npos)
      << b.text;
  EXPECT_NE(b.text.find("First action: smaller batch"), std::string::npos);
}

}  // namespace
}  // namespace notify

#include "notify/notify.hpp"

namespace notify {
namespace {

TEST(ShouldNotify, FollowsNotifyWhen) {
  report::RunReport failed = failed_run();
  report::RunReport ok = failed_run();
  ok.exit_code = 0;
  ok.verdict->label = "success";
  config::Config c;
  EXPECT_TRUE(should_notify(c, failed));
  EXPECT_TRUE(should_notify(c, ok));
  c.notify_when = "failure";
  EXPECT_TRUE(should_notify(c, failed));
  EXPECT_FALSE(should_notify(c, ok));
  c.notify_when = "never";
  EXPECT_FALSE(should_notify(c, failed));
}

report::RunReport interrupted_run() {
  report::RunReport r = failed_run();
  r.exit_code.reset();
  r.signal = "SIGINT";
  r.verdict->label = "cancelled";
  r.verdict->rule = "cancelled-by-signal";
  r.interactive = true;
  return r;
}

TEST(Policy, CtrlCAtTheTerminalIsNotMailedUnderFailure) {
  config::Config c;
  c.notify_when = "failure";
  report::RunReport r = interrupted_run();
  EXPECT_TRUE(interrupted_at_terminal(r));
  EXPECT_FALSE(should_notify(c, r));
  // exit 130 after Python's KeyboardInterrupt traceback, exit 1 after a framework's
  // graceful stop that quotes it.
  r.signal.reset();
  r.exit_code = 130;
  EXPECT_FALSE(should_notify(c, r));
  r.exit_code = 1;
  r.verdict->evidence.push_back({12, "KeyboardInterrupt", "log"});
  EXPECT_FALSE(should_notify(c, r));
  // `always` still mails it.
  c.notify_when = "always";
  EXPECT_TRUE(should_notify(c, r));
}

TEST(Policy, OtherCancellationsAreStillMailedUnderFailure) {
  config::Config c;
  c.notify_when = "failure";
  report::RunReport batch = interrupted_run();
  batch.interactive = false;  // a batch job's SIGINT came from someone else (scancel -s INT)
  EXPECT_TRUE(should_notify(c, batch));
  report::RunReport term = interrupted_run();
  term.signal = "SIGTERM";  // kill or scancel, even at a terminal
  EXPECT_TRUE(should_notify(c, term));
  report::RunReport crash = interrupted_run();
  crash.verdict->label = "script_error";  // a real failure that happened to die of SIGINT
  EXPECT_TRUE(should_notify(c, crash));
}

}  // namespace
}  // namespace notify
