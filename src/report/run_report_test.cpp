#include "report/run_report.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace report {
namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/gpualert-report-XXXXXX";
  char* d = ::mkdtemp(tmpl);
  return d ? d : "";
}

// save() is report.json's one writer and load() its one reader: what one writes the
// other gives back, and what the classifier takes from it comes through exit_info
// and host_evidence.
TEST(RunReport, SaveThenLoadGivesTheSameFacts) {
  const std::string dir = temp_dir();
  ASSERT_FALSE(dir.empty());
  RunReport r;
  r.name = "llama-ft";
  r.argv = {"python", "train.py"};
  r.signal = "SIGKILL";
  r.wrapper_timeout = true;
  r.cgroup_oom_kills = 2;
  r.kernel_log_read = true;
  r.scheduler_lines = {"slurmstepd: error: *** JOB 7 ON n1 CANCELLED AT now ***"};
  r.gpu_lines = {"NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus."};
  model::Verdict v;
  v.label = "host_oom";
  v.rule = "oom-killer";
  v.evidence = {{12, "Out of memory: Killed process 42", "kernel"}};
  r.verdict = v;
  const std::string path = dir + "/report.json";
  ASSERT_TRUE(save(path, r));
  auto back = load(path);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->name, r.name);
  EXPECT_EQ(back->argv, r.argv);
  ASSERT_TRUE(back->verdict);
  EXPECT_EQ(back->verdict->label, "host_oom");
  ASSERT_EQ(back->verdict->evidence.size(), 1u);
  EXPECT_EQ(back->verdict->evidence[0].line, 12u);

  auto exit = exit_info(*back);
  ASSERT_TRUE(exit) << exit.error();
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_FALSE(exit->exit_code);
  EXPECT_TRUE(exit->wrapper_timeout);
  model::HostEvidence host = host_evidence(*back);
  EXPECT_EQ(host.cgroup_oom_kills, 2);
  EXPECT_TRUE(host.kernel_log_read);
  EXPECT_EQ(host.scheduler_lines, r.scheduler_lines);
  EXPECT_EQ(host.gpu_lines, r.gpu_lines);
  EXPECT_TRUE(host.kernel_lines.empty());  // kernel.log is its own file
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

TEST(RunReport, ExitInfoOfAnExitCodeAndOfAnUnknownSignal) {
  RunReport r;
  r.exit_code = 3;
  auto exit = exit_info(r);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_FALSE(exit->signal);
  r.signal = "SIGNOTONE";
  EXPECT_FALSE(exit_info(r));
}

TEST(RunReport, LoadSaysWhichFileIsBroken) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/report.json";
  ASSERT_TRUE(util::write_file_atomic(path, "{\"exit_code\": \"three\"}"));
  auto r = load(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find(path), std::string::npos) << r.error();
  ASSERT_TRUE(util::write_file_atomic(path, "not json"));
  EXPECT_FALSE(load(path));
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace report
