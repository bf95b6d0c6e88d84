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

TEST(JobGpus, SlurmIndicesWinOverRenumberedCudaIndices) {
  auto s = gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_JOB_GPUS", "4,5"}});
  EXPECT_EQ(describe(s), (std::vector<std::string>{"4", "5"}));
  EXPECT_EQ(s.from, "SLURM_JOB_GPUS");
}

TEST(JobGpus, UuidsWinOverEverything) {
  auto s = gpu::job_gpus({{"CUDA_VISIBLE_DEVICES", "GPU-aa,MIG-bb"}, {"SLURM_JOB_GPUS", "4"}});
  EXPECT_EQ(describe(s), (std::vector<std::string>{"GPU-aa", "MIG-bb"}));
  auto n = gpu::job_gpus({{"NVIDIA_VISIBLE_DEVICES", "GPU-cc"}});
  EXPECT_EQ(describe(n), (std::vector<std::string>{"GPU-cc"}));
}

TEST(JobGpus, ContainerAllAndNone) {
  EXPECT_TRUE(gpu::job_gpus({{"NVIDIA_VISIBLE_DEVICES", "all"}}).all);
  auto none = gpu::job_gpus({{"NVIDIA_VISIBLE_DEVICES", "void"}});
  EXPECT_FALSE(none.all);
  EXPECT_TRUE(none.selectors.empty());
}

}  // namespace
