#include "host/evidence.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "host/test_support.hpp"

namespace host {
namespace {

using testing::RealJob;

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

TEST(MemoryCgroupPath, TheControllersPathAsTheKernelPrintsIt) {
  EXPECT_EQ(memory_cgroup_path("12:pids:/slurm/j\n9:memory:/slurm/uid_0/job_4/step_0\n0::/\n"),
            "/slurm/uid_0/job_4/step_0");
  EXPECT_EQ(memory_cgroup_path("0::/user.slice/job.scope/\n"), "/user.slice/job.scope");
  // The root (or a cgroup namespace's root) holds everything: it tells nothing apart.
  EXPECT_EQ(memory_cgroup_path("4:memory:/\n0::/\n"), std::nullopt);
  EXPECT_EQ(memory_cgroup_path("0::/\n"), std::nullopt);
  EXPECT_EQ(memory_cgroup_path(""), std::nullopt);
}

// ---------------------------------------------------------------- /dev/kmsg, live

TEST(EvidenceWatch, ReadsTheKernelLogAsRecordsArriveAndKeepsTheJobsOnly) {
  if (::access("/dev/kmsg", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "/dev/kmsg is not readable and writable here (needs root)";
  }
  RealJob job;
  auto watch = EvidenceWatch::start();
  watch.open_kernel_log(job.first);
  ASSERT_GE(watch.kernel_log_fd(), 0);
  // Records as a GPU driver writes them (an Xid code no driver uses, so that no other
  // run on this machine that reads them is told its GPU failed).
  auto record = [](pid_t pid, const char* name) {
    std::string r = "<4>NVRM: Xid (PCI:0000:3b:00): 999, pid=" + std::to_string(pid) +
                    ", name=" + name + ", gpualert unit test record\n";
    int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, r.data(), r.size()), static_cast<ssize_t>(r.size()));
    ::close(fd);
  };
  record(job.other, "other_job");
  record(job.child, "this_job");
  // The fd says when there is something to read; reading never blocks.
  pollfd p{watch.kernel_log_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  watch.on_readable();
  watch.on_readable();
  ASSERT_EQ(watch.kernel_lines().size(), 1u);
  EXPECT_NE(watch.kernel_lines()[0].find("name=this_job"), std::string::npos);
  watch.finish();
  ASSERT_EQ(watch.kernel_lines().size(), 1u);
  EXPECT_NE(watch.sources().at("kernel_log").find("1 record(s) about other processes"),
            std::string::npos);
}

}  // namespace
}  // namespace host
