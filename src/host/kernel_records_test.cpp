#include "host/kernel_records.hpp"

#include <gtest/gtest.h>

#include "host/test_support.hpp"

namespace host {
namespace {

using testing::RealJob;

TEST(KmsgRecord, FormatsTheTimestampAndText) {
  EXPECT_EQ(format_kmsg_record("3,1234,5123456,-;Out of memory: Killed process 42 (python)\n"),
            "[    5.123456] Out of memory: Killed process 42 (python)");
  // Continuation lines (dictionary) are dropped.
  EXPECT_EQ(format_kmsg_record("6,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79\n SUBSYSTEM=pci\n"),
            "[    0.000100] NVRM: Xid (PCI:0000:3b:00): 79");
  EXPECT_EQ(format_kmsg_record("no separator"), "");
  EXPECT_EQ(format_kmsg_record("x,y;text"), "");
}

TEST(KmsgRecord, RelevantLines) {
  EXPECT_TRUE(kernel_line_relevant("python invoked oom-killer: gfp_mask=0xcc0"));
  EXPECT_TRUE(kernel_line_relevant("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234"));
  EXPECT_TRUE(kernel_line_relevant("python[123]: segfault at 0 ip 00007f sp 00007ff error 4"));
  // The memory cgroup's part of an OOM report (printed only there).
  EXPECT_TRUE(
      kernel_line_relevant("memory: usage 184320000kB, limit 184320000kB, failcnt 2316326"));
  // AMD's and Intel's GPU drivers, for people to read (no rule decides on them).
  EXPECT_TRUE(kernel_line_relevant(
      "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32777)"));
  EXPECT_TRUE(kernel_line_relevant("i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:85dffffb"));
  EXPECT_FALSE(kernel_line_relevant("EXT4-fs (vda): mounted filesystem"));
}

// The records of a cgroup OOM kill as this kernel prints them (6.x), for a task in `memcg`.
std::vector<std::string> oom_report(const std::string& memcg, pid_t pid) {
  std::string p = std::to_string(pid);
  return {
      "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
      "memory: usage 65536kB, limit 65536kB, failcnt 20",
      "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=" +
          memcg + ",task_memcg=" + memcg + ",task=python3,pid=" + p + ",uid=1000",
      "Memory cgroup out of memory: Killed process " + p +
          " (python3) total-vm:79420kB, anon-rss:65280kB, file-rss:5352kB, shmem-rss:0kB, "
          "UID:1000 pgtables:192kB oom_score_adj:0",
  };
}

void add_all(KernelRecordFilter& f, const std::vector<std::string>& lines) {
  for (const auto& l : lines) {
    f.add(l, "[ 1.000000] " + l);
  }
}

bool any_mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines) {
    if (l.find(what) != std::string::npos) {
      return true;
    }
  }
  return false;
}

JobScope scope_in(std::optional<std::string> memcg,
                  std::optional<std::set<std::string>> gpus = std::nullopt) {
  JobScope s;
  s.memcg = std::move(memcg);
  s.gpus = [gpus] { return gpus; };
  return s;
}

TEST(KernelRecordFilter, AnotherCgroupsOomReportIsLeftOutWhole) {
  RealJob job;
  KernelRecordFilter f(scope_in("/jobs/mine"), std::make_shared<ProcessTree>(job.first));
  add_all(f, oom_report("/jobs/theirs", job.other));
  // Its reaper line comes later, on its own, and goes with the report it follows.
  add_all(f, {"oom_reaper: reaped process " + std::to_string(job.other) +
              " (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"});
  f.finish();
  EXPECT_TRUE(f.kept().empty()) << f.kept().front();
  EXPECT_EQ(f.dropped(), 5u);
}

TEST(KernelRecordFilter, TheJobsCgroupOrOneBelowItIsKeptWhole) {
  RealJob job;
  KernelRecordFilter f(scope_in("/jobs/mine"), std::make_shared<ProcessTree>(job.first));
  auto own = oom_report("/jobs/mine/step_0", job.child);
  add_all(f, own);
  add_all(f, {"oom_reaper: reaped process " + std::to_string(job.child) +
              " (python3), now "
              "anon-rss:0kB"});
  // A cgroup whose name only begins like the job's is another.
  add_all(f, oom_report("/jobs/mine2", job.other));
  f.finish();
  ASSERT_EQ(f.kept().size(), 5u);
  for (size_t i = 0; i < own.size(); ++i) {
    EXPECT_EQ(f.kept()[i], "[ 1.000000] " + own[i]);
  }
  EXPECT_FALSE(any_mentions(f.kept(), "/jobs/mine2"));
  EXPECT_EQ(f.dropped(), 4u);
}

TEST(KernelRecordFilter, TheCgroupDecidesOverAPidWhenBothAreKnown) {
  // A pid of the job's in another cgroup's report: pids are reused across jobs, the
  // cgroup the kernel names is not.
  RealJob job;
  KernelRecordFilter f(scope_in("/jobs/mine"), std::make_shared<ProcessTree>(job.first));
  add_all(f, oom_report("/jobs/theirs", job.child));
  f.finish();
  EXPECT_TRUE(f.kept().empty());
}

TEST(KernelRecordFilter, WithoutTheJobsCgroupThePidDecides) {
  RealJob job;
  KernelRecordFilter f(scope_in(std::nullopt), std::make_shared<ProcessTree>(job.first));
  add_all(f, oom_report("/a", job.other));
  EXPECT_TRUE(f.kept().empty());
  add_all(f, oom_report("/b", job.child));
  EXPECT_EQ(f.kept().size(), 4u);
  EXPECT_FALSE(any_mentions(f.kept(), "pid=" + std::to_string(job.other)));
  // A global OOM kill's summary, alone ("Out of memory: Killed process N").
  add_all(f, {"Out of memory: Killed process " + std::to_string(job.other) + " (x) total-vm:1kB"});
  add_all(f, {"Out of memory: Killed process " + std::to_string(job.first) + " (sh) total-vm:1kB"});
  f.finish();
  ASSERT_EQ(f.kept().size(), 5u);
  EXPECT_NE(f.kept().back().find("Killed process " + std::to_string(job.first)), std::string::npos);
}

TEST(KernelRecordFilter, OlderKernelsReportAndAReportLeftOpen) {
  RealJob job;
  KernelRecordFilter f(scope_in("/jobs/mine"), std::make_shared<ProcessTree>(job.first));
  const std::string c = std::to_string(job.child), o = std::to_string(job.other);
  // 4.x: the task's cgroup in "Task in ... killed as a result of limit of ...".
  add_all(f, {"python invoked oom-killer: gfp_mask=0x24000c0, order=0, oom_score_adj=0",
              "Task in /jobs/theirs killed as a result of limit of /jobs/theirs",
              "memory: usage 1024kB, limit 1024kB, failcnt 9",
              "Memory cgroup out of memory: Kill process " + o +
                  " (python) score 999 or sacrifice child",
              "Killed process " + o + " (python) total-vm:1kB, anon-rss:1kB, file-rss:0kB"});
  EXPECT_TRUE(f.kept().empty());
  // The run ends in the middle of the job's own report: what it has decides.
  add_all(f, {"python invoked oom-killer: gfp_mask=0x24000c0, order=0, oom_score_adj=0",
              "Task in /jobs/mine killed as a result of limit of /jobs/mine",
              "memory: usage 1024kB, limit 1024kB, failcnt 9"});
  EXPECT_TRUE(f.kept().empty());
  f.finish();
  EXPECT_EQ(f.kept().size(), 3u);
}

TEST(KernelRecordFilter, AnotherRecordBetweenTheLinesOfAReport) {
  RealJob job;
  KernelRecordFilter f(scope_in("/jobs/mine"), std::make_shared<ProcessTree>(job.first));
  auto own = oom_report("/jobs/mine", job.child);
  add_all(f, {own[0], own[1]});
  add_all(f, {"NVRM: Xid (PCI:0000:3b:00): 79, pid=" + std::to_string(job.other) +
              ", name=other_job, GPU has fallen off the bus."});
  add_all(f, {own[2], own[3]});
  f.finish();
  ASSERT_EQ(f.kept().size(), 4u);
  EXPECT_FALSE(any_mentions(f.kept(), "other_job"));
}

TEST(KernelRecordFilter, GpuRecordsNamingAProcessGoByIt) {
  RealJob job;
  // Even on the job's own GPU, a record naming another process is that process's.
  KernelRecordFilter f(scope_in("/jobs/mine", std::set<std::string>{"0000:3b:00"}),
                       std::make_shared<ProcessTree>(job.first));
  add_all(
      f,
      {"NVRM: Xid (PCI:0000:3b:00): 79, pid=" + std::to_string(job.other) +
           ", name=other_job, GPU has fallen off the bus.",
       "NVRM: Xid (PCI:0000:3b:00): 13, pid='" + std::to_string(job.child) +
           "', name=python3, Graphics SM Warp Exception",
       "python3[" + std::to_string(job.other) + "]: segfault at 0 ip 00007f sp 00007ff error 4",
       "traps: python3[" + std::to_string(job.child) + "] general protection fault ip:7f sp:7ff"});
  f.finish();
  ASSERT_EQ(f.kept().size(), 2u);
  EXPECT_NE(f.kept()[0].find(": 13, pid='" + std::to_string(job.child)), std::string::npos);
  EXPECT_NE(f.kept()[1].find("general protection"), std::string::npos);
  EXPECT_EQ(f.dropped(), 2u);
}

TEST(KernelRecordFilter, GpuRecordsNamingNoProcessGoByTheGpu) {
  RealJob job;
  const std::string unnamed =
      "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
      "GPU has fallen off the bus.";
  const std::string other_gpu = "NVRM: Xid (PCI:0000:5E:00): 48, An uncorrectable double bit error";
  {
    KernelRecordFilter f(scope_in(std::nullopt, std::set<std::string>{"0000:3b:00"}),
                         std::make_shared<ProcessTree>(job.first));
    add_all(f, {unnamed, other_gpu, "nvidia 0000:5e:00.0: enabling device (0000 -> 0003)"});
    f.finish();
    ASSERT_EQ(f.kept().size(), 1u);
    EXPECT_EQ(f.kept()[0], "[ 1.000000] " + unnamed);
  }
  {
    // The job's GPUs are not known: kept, and marked as not attributed.
    KernelRecordFilter f(scope_in(std::nullopt), std::make_shared<ProcessTree>(job.first));
    add_all(f, {unnamed, other_gpu});
    f.finish();
    ASSERT_EQ(f.kept().size(), 2u);
    EXPECT_NE(f.kept()[1].find(other_gpu + "  [not attributed to this job"), std::string::npos);
  }
}

}  // namespace
}  // namespace host
