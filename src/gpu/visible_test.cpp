#include "gpu/visible.hpp"

#include <gtest/gtest.h>

namespace {

std::vector<std::string> describe(const gpu::Selection& s) {
  std::vector<std::string> out;
  for (const auto& x : s.selectors) {
    out.push_back(x.by_uuid ? x.uuid : std::to_string(x.index));
  }
  return out;
}

TEST(JobGpus, NothingSetMeansEveryGpu) {
  auto s = gpu::job_gpus({});
  EXPECT_TRUE(s.all);
  EXPECT_TRUE(s.selectors.empty());
}

TEST(JobGpus, CudaIndicesInTheJobsOrder) {
  auto s = gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "3, 1"}});
  EXPECT_FALSE(s.all);
  EXPECT_EQ(describe(s), (std::vector<std::string>{"3", "1"}));
  EXPECT_EQ(s.from, "CUDA_VISIBLE_DEVICES");
}

TEST(JobGpus, CudaStopsAtTheFirstBadEntry) {
  EXPECT_EQ(describe(gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "0,x,2"}})),
            (std::vector<std::string>{"0"}));
  EXPECT_TRUE(gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "-1"}}).selectors.empty());
  EXPECT_FALSE(gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", ""}}).all);
}

TEST(JobGpus, CudaIndicesCountWithinSlurmsList) {
  auto s = gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_JOB_GPUS", "4,5"}});
  EXPECT_EQ(describe(s), (std::vector<std::string>{"4", "5"}));
  EXPECT_EQ(s.from, "CUDA_VISIBLE_DEVICES within SLURM_JOB_GPUS");
  auto narrowed = gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "1"}, {"SLURM_JOB_GPUS", "4,5,6,7"}});
  EXPECT_EQ(describe(narrowed), (std::vector<std::string>{"5"}));
}

TEST(JobGpus, SlurmsOwnIndicesWhenCudaRepeatsThemOrIsAbsent) {
  EXPECT_EQ(describe(gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "4,5"}, {"SLURM_JOB_GPUS", "4,5"}})),
            (std::vector<std::string>{"4", "5"}));
  EXPECT_EQ(describe(gpu::job_gpus({{"SLURM_JOB_GPUS", "2"}})), (std::vector<std::string>{"2"}));
  // Not indices into Slurm's list: Slurm's list.
  EXPECT_EQ(describe(gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "6"}, {"SLURM_JOB_GPUS", "4,5"}})),
            (std::vector<std::string>{"4", "5"}));
}

TEST(JobGpus, StepGpusBeforeJobGpus) {
  auto s = gpu::job_gpus({{"SLURM_JOB_GPUS", "0,1,2,3"}, {"SLURM_STEP_GPUS", "2,3"}});
  EXPECT_EQ(describe(s), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(s.from, "SLURM_STEP_GPUS");
}

TEST(JobGpus, UuidsWinOverEverything) {
  auto s = gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "GPU-aa,MIG-bb"}, {"SLURM_JOB_GPUS", "4"}});
  EXPECT_EQ(describe(s), (std::vector<std::string>{"GPU-aa", "MIG-bb"}));
  auto n = gpu::job_gpus({{"NVIDIA_VISIBLE_DEVICES", "GPU-cc"}});
  EXPECT_EQ(describe(n), (std::vector<std::string>{"GPU-cc"}));
}

TEST(JobGpus, ContainerIndicesMeanEveryGpuTheContainerSees) {
  EXPECT_TRUE(gpu::job_gpus({{"NVIDIA_VISIBLE_DEVICES", "all"}}).all);
  EXPECT_TRUE(gpu::job_gpus({{"NVIDIA_VISIBLE_DEVICES", "2,3"}}).all);
  auto none = gpu::job_gpus({{"NVIDIA_VISIBLE_DEVICES", "void"}});
  EXPECT_FALSE(none.all);
  EXPECT_TRUE(none.selectors.empty());
}

}  // namespace
