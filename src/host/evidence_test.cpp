#include "host/evidence.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

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

TEST(MemoryCgroupPath, TheControllersPathAsTheKernelPrintsIt) {
  EXPECT_EQ(memory_cgroup_path("12:pids:/slurm/j\n9:memory:/slurm/uid_0/job_4/step_0\n0::/\n"),
            "/slurm/uid_0/job_4/step_0");
  EXPECT_EQ(memory_cgroup_path("0::/user.slice/job.scope/\n"), "/user.slice/job.scope");
  // The root (or a cgroup namespace's root) holds everything: it tells nothing apart.
  EXPECT_EQ(memory_cgroup_path("4:memory:/\n0::/\n"), std::nullopt);
  EXPECT_EQ(memory_cgroup_path("0::/\n"), std::nullopt);
  EXPECT_EQ(memory_cgroup_path(""), std::nullopt);
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

// ---------------------------------------------------------------- the job's records

// A real job: a first process (leading its own group) with a child, both waiting.
// `other` is a process outside it, as another job's would be.
struct RealJob {
  pid_t first = -1, child = -1, other = -1;
  RealJob() {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    first = ::fork();
    if (first == 0) {
      ::setpgid(0, 0);
      pid_t c = ::fork();
      if (c == 0) {
        ::pause();
        ::_exit(0);
      }
      (void)!::write(ready[1], &c, sizeof c);
      ::pause();
      ::_exit(0);
    }
    EXPECT_EQ(::read(ready[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
    ::close(ready[0]);
    ::close(ready[1]);
    other = ::fork();
    if (other == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~RealJob() {
    for (pid_t p : {child, first, other}) {
      ::kill(p, SIGKILL);
    }
    ::waitpid(first, nullptr, 0);
    ::waitpid(other, nullptr, 0);
  }
};

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

TEST(ProcessTree, TheJobsProcessesAndNoOthers) {
  RealJob job;
  ProcessTree tree(job.first);
  EXPECT_TRUE(tree.contains(job.first));
  EXPECT_TRUE(tree.contains(job.child));
  EXPECT_FALSE(tree.contains(job.other));
  EXPECT_FALSE(tree.contains(::getpid()));
  EXPECT_FALSE(tree.contains(0));
}

TEST(ProcessTree, AProcessSeenStaysTheJobsAfterItIsGone) {
  RealJob job;
  ProcessTree tree(job.first);
  tree.refresh();
  ::kill(job.child, SIGKILL);
  // Reaped by init (its parent does not wait): gone from /proc.
  ::kill(job.first, SIGKILL);
  ::waitpid(job.first, nullptr, 0);
  for (int i = 0; i < 500 && ::access(("/proc/" + std::to_string(job.child)).c_str(), F_OK) == 0;
       ++i) {
    ::usleep(10000);
  }
  ASSERT_NE(::access(("/proc/" + std::to_string(job.child)).c_str(), F_OK), 0);
  EXPECT_TRUE(tree.contains(job.child));
  EXPECT_TRUE(tree.contains(job.first));
  EXPECT_FALSE(tree.contains(job.other));
}

TEST(ProcessTree, AThreadIsItsProcesss) {
  // This test process as the job: a thread's id is the job's, another process's not.
  ProcessTree tree(::getpid());
  pid_t tid = 0;
  int started[2], done[2];
  ASSERT_EQ(::pipe(started), 0);
  ASSERT_EQ(::pipe(done), 0);
  std::thread t([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    char c;
    (void)!::write(started[1], "x", 1);
    (void)!::read(done[0], &c, 1);
  });
  char c;
  ASSERT_EQ(::read(started[0], &c, 1), 1);
  EXPECT_NE(tid, ::getpid());
  EXPECT_TRUE(tree.contains(tid));
  (void)!::write(done[1], "x", 1);
  t.join();
  for (int fd : {started[0], started[1], done[0], done[1]}) {
    ::close(fd);
  }
}

// ---------------------------------------------------------------- the job's GPUs

// A driver directory as /proc/driver/nvidia/gpus lays it out: one folder per GPU.
struct DriverDir {
  std::string root;
  DriverDir() {
    char tmpl[] = "/tmp/gpualert-nvidia-XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~DriverDir() { std::system(("rm -rf " + root).c_str()); }
  void gpu(const std::string& bus, const std::string& uuid, int minor,
           const std::string& model = "NVIDIA H100 80GB HBM3") {
    ::mkdir((root + "/" + bus).c_str(), 0755);
    std::ofstream(root + "/" + bus + "/information")
        << "Model: \t\t " << model << "\nIRQ:   \t\t 0\nGPU UUID: \t " << uuid
        << "\nVideo BIOS: \t 96.00.74.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\n"
        << "DMA Mask: \t 0xfffffffffffff\nBus Location: \t " << bus << "\nDevice Minor: \t "
        << minor << "\nGPU Excluded:\t No\n";
  }
};

std::optional<std::set<std::string>> gpus_for(const std::map<std::string, std::string>& env,
                                              const std::string& dir) {
  return job_gpu_bus_ids(
      [&](const std::string& k) -> std::optional<std::string> {
        auto it = env.find(k);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      dir);
}

using Set = std::set<std::string>;

TEST(JobGpus, UuidsSchedulerAndContainerLists) {
  DriverDir d;
  d.gpu("0000:5e:00.0", "GPU-5c8f0a1e-1111-2222-3333-444455556666", 1);
  d.gpu("0000:3B:00.0", "GPU-0a9b8c7d-1111-2222-3333-444455556666", 0);
  d.gpu("0000:86:00.0", "GPU-86868686-1111-2222-3333-444455556666", 2);
  EXPECT_EQ(
      gpus_for({{"CUDA_VISIBLE_DEVICES", "GPU-5c8f0a1e-1111-2222-3333-444455556666"}}, d.root),
      Set{"0000:5e:00"});
  // A unique prefix, as CUDA accepts; an ambiguous one names no GPU.
  EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", "GPU-0a9b,GPU-86"}}, d.root),
            (Set{"0000:3b:00", "0000:86:00"}));
  EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", "GPU-"}}, d.root), std::nullopt);
  // Slurm's list is the device numbers; CUDA's renumbered 0.. under it is not used.
  EXPECT_EQ(gpus_for({{"SLURM_JOB_GPUS", "2,1"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}, d.root),
            (Set{"0000:86:00", "0000:5e:00"}));
  EXPECT_EQ(gpus_for({{"NVIDIA_VISIBLE_DEVICES", "0"}}, d.root), Set{"0000:3b:00"});
  EXPECT_EQ(gpus_for({{"NVIDIA_VISIBLE_DEVICES", "none"}}, d.root), Set{});
  EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", ""}}, d.root), Set{});
  // CUDA's own indices on a node of one model: PCI bus order.
  EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", "1"}}, d.root), Set{"0000:5e:00"});
  EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", "1"}, {"NVIDIA_VISIBLE_DEVICES", "all"}}, d.root),
            Set{"0000:5e:00"});
}

TEST(JobGpus, WhatCantBeToldIsUnknown) {
  DriverDir d;
  d.gpu("0000:3b:00.0", "GPU-0a9b8c7d-1111-2222-3333-444455556666", 0, "Tesla V100");
  d.gpu("0000:5e:00.0", "GPU-5c8f0a1e-1111-2222-3333-444455556666", 1, "Tesla T4");
  EXPECT_EQ(gpus_for({}, d.root), std::nullopt);  // any GPU of the node
  EXPECT_EQ(gpus_for({{"NVIDIA_VISIBLE_DEVICES", "all"}}, d.root), std::nullopt);
  // Mixed models: CUDA numbers the fastest first, not by bus.
  EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", "0"}}, d.root), std::nullopt);
  EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", "0"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}, d.root),
            Set{"0000:3b:00"});
  // One entry that names no GPU the driver lists: not a partial set.
  EXPECT_EQ(gpus_for({{"SLURM_JOB_GPUS", "0,7"}}, d.root), std::nullopt);
  EXPECT_EQ(
      gpus_for({{"CUDA_VISIBLE_DEVICES", "MIG-0a9b8c7d-1111-2222-3333-444455556666"}}, d.root),
      std::nullopt);
  EXPECT_EQ(gpus_for({{"SLURM_JOB_GPUS", "0"}}, d.root + "/absent"), std::nullopt);
}

TEST(JobGpus, TheDriversOwnListWhereThereIsOne) {
  // On a machine with the NVIDIA driver: each GPU's UUID names its own bus.
  const std::string dir = "/proc/driver/nvidia/gpus";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    GTEST_SKIP() << "no NVIDIA driver here";
  }
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') {
      continue;
    }
    std::ifstream in(dir + "/" + e->d_name + "/information");
    std::string line, uuid;
    while (std::getline(in, line)) {
      if (line.rfind("GPU UUID:", 0) == 0) {
        uuid = line.substr(line.find("GPU-"));
      }
    }
    ASSERT_FALSE(uuid.empty()) << e->d_name;
    std::string bus = e->d_name;
    for (char& ch : bus) {
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    EXPECT_EQ(gpus_for({{"CUDA_VISIBLE_DEVICES", uuid}}, dir), Set{bus.substr(0, 10)}) << uuid;
    ++n;
  }
  ::closedir(d);
  EXPECT_GT(n, 0);
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
