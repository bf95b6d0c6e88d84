#include "gpu/watch.hpp"

#include <gtest/gtest.h>

namespace {

TEST(XidLines, WordedAsTheKernelWordsThemWithItsPciForm) {
  report::RunReport rep;
  rep.gpus = nlohmann::json::parse(R"([
    {"uuid": "GPU-a", "pci": "00000000:19:00.0", "xids": [{"xid": 79, "at": "t"}, {"xid": 48, "at": "u"}]},
    {"uuid": "GPU-b", "pci": "00000000:3B:00.0", "xids": []},
    {"uuid": "GPU-c", "xids": [{"xid": "not a number"}]}
  ])");
  EXPECT_EQ(
      gpu::xid_lines(rep),
      (std::vector<std::string>{"NVRM: Xid (PCI:0000:19:00): 79, reported by NVML for GPU-a",
                                "NVRM: Xid (PCI:0000:19:00): 48, reported by NVML for GPU-a"}));
}

TEST(XidLines, NothingWithoutGpuFacts) {
  report::RunReport rep;
  EXPECT_TRUE(gpu::xid_lines(rep).empty());
}

TEST(Watch, OffAndNoDriverStartNothingAndSayWhy) {
  auto off = gpu::start("/nonexistent-run-dir", 1, 0);
  EXPECT_EQ(off.pid, -1);
  EXPECT_EQ(off.unavailable, "off (gpu_sample_seconds = 0)");
  ::setenv("GPUALERT_NVIDIA_DRIVER_FILE", "/nonexistent/nvidia/version", 1);
  auto none = gpu::start("/nonexistent-run-dir", 1, 5);
  ::unsetenv("GPUALERT_NVIDIA_DRIVER_FILE");
  EXPECT_EQ(none.pid, -1);
  EXPECT_EQ(none.unavailable,
            "no NVIDIA driver (/nonexistent/nvidia/version: No such file or directory)");
  report::RunReport rep;
  gpu::finish(none, rep);
  EXPECT_EQ(rep.sources["gpu"], none.unavailable);
  EXPECT_FALSE(rep.gpus.has_value());
}

}  // namespace
