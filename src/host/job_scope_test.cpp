#include "host/job_scope.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "host/test_support.hpp"

namespace host {
namespace {

using testing::RealJob;

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

}  // namespace
}  // namespace host
