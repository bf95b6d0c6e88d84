#include "host/evidence.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace host {
namespace {

TEST(OomCounterPath, CgroupV1MemoryController) {
  std::string cgroup =
      "12:pids:/slurm/uid_1000/job_42\n"
      "9:memory:/slurm/uid_1000/job_42/step_0\n"
      "1:name=systemd:/slurm\n";
  EXPECT_EQ(oom_counter_path(cgroup, "/cg"),
            "/cg/memory/slurm/uid_1000/job_42/step_0/memory.oom_control");
}

TEST(OomCounterPath, CgroupV1ControllersSharingAHierarchy) {
  EXPECT_EQ(oom_counter_path("5:cpu,memory,cpuacct:/job\n", "/cg"),
            "/cg/memory/job/memory.oom_control");
  // A name that only contains "memory" is not the controller.
  EXPECT_EQ(oom_counter_path("5:memory_x,name=memory2:/job\n", "/cg"), std::nullopt);
}

TEST(OomCounterPath, RootCgroupAndMissingTrailingNewline) {
  EXPECT_EQ(oom_counter_path("4:memory:/", "/cg"), "/cg/memory/memory.oom_control");
}

TEST(OomCounterPath, CgroupV2UnifiedAndHybridLayouts) {
  char tmpl[] = "/tmp/gpualert-cgroot-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  // Pure v2: memory.events under the root itself.
  ASSERT_EQ(::mkdir((root + "/job").c_str(), 0755), 0);
  std::ofstream(root + "/job/memory.events") << "oom_kill 0\n";
  EXPECT_EQ(oom_counter_path("0::/job\n", root), root + "/job/memory.events");
  // Hybrid (v2 mounted at unified/): used where the root has no such file.
  EXPECT_EQ(oom_counter_path("0::/other\n", root), root + "/unified/other/memory.events");
  // A v1 memory controller wins over the unified line, in either order.
  EXPECT_EQ(oom_counter_path("0::/job\n3:memory:/m\n", root),
            root + "/memory/m/memory.oom_control");
  std::system(("rm -rf " + root).c_str());
}

TEST(OomCounterPath, NothingUsable) {
  EXPECT_EQ(oom_counter_path("", "/cg"), std::nullopt);
  EXPECT_EQ(oom_counter_path("garbage\n\n3:pids\n", "/cg"), std::nullopt);
}

TEST(ParseOomKill, V1AndV2Formats) {
  EXPECT_EQ(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 3);
  EXPECT_EQ(parse_oom_kill("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n"), 1);
  EXPECT_EQ(parse_oom_kill("oom_kill 7"), 7);  // no final newline
}

TEST(ParseOomKill, AbsentOrMalformed) {
  // Kernels before 4.13 have no oom_kill line in memory.oom_control.
  EXPECT_EQ(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\n"), std::nullopt);
  EXPECT_EQ(parse_oom_kill("oom_kill x\n"), std::nullopt);
  EXPECT_EQ(parse_oom_kill(""), std::nullopt);
}

TEST(ReadOomKill, ReadsAFileAndSaysNothingForAMissingOne) {
  char path[] = "/tmp/gpualert-oom-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n";
  EXPECT_EQ(read_oom_kill(path), 5);
  ::unlink(path);
  EXPECT_EQ(read_oom_kill(path), std::nullopt);
}

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

}  // namespace
}  // namespace host
