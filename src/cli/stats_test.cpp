#include "cli/stats.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "util/fd.hpp"
#include "util/text.hpp"

namespace cli {
namespace {

using Gpus = std::vector<std::string>;

report::RunReport with(std::map<std::string, std::string> env,
                       std::map<std::string, std::string> fields = {}) {
  report::RunReport r;
  r.env = std::move(env);
  model::Verdict v;
  v.label = "cuda_oom";
  v.fields = std::move(fields);
  r.verdict = v;
  return r;
}

TEST(GpusOf, TheJobsDevicesInTheNodesNumbering) {
  EXPECT_EQ(gpus_of(with({})), Gpus{});
  EXPECT_EQ(gpus_of(with({{"CUDA_VISIBLE_DEVICES", "0, 1"}})), (Gpus{"gpu 0", "gpu 1"}));
  // Slurm's list holds the node's device numbers; CUDA's is renumbered under confinement.
  EXPECT_EQ(gpus_of(with({{"SLURM_JOB_GPUS", "4,5"}, {"CUDA_VISIBLE_DEVICES", "0,1"}})),
            (Gpus{"gpu 4", "gpu 5"}));
  EXPECT_EQ(gpus_of(with({{"CUDA_VISIBLE_DEVICES", "GPU-5c8f0a1e,MIG-0a9b"}})),
            (Gpus{"GPU-5c8f0a1e", "MIG-0a9b"}));
  // No GPU in particular: none counted, rather than a made-up one.
  EXPECT_EQ(gpus_of(with({{"CUDA_VISIBLE_DEVICES", "NoDevFiles"}})), Gpus{});
  EXPECT_EQ(gpus_of(with({{"CUDA_VISIBLE_DEVICES", ""}})), Gpus{});
}

TEST(GpusOf, TheGpuTheVerdictNames) {
  // A CUDA index ("GPU 1 has a total capacity") is the job's second device.
  EXPECT_EQ(
      gpus_of(with({{"SLURM_JOB_GPUS", "4,5"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}, {{"gpu", "1"}})),
      Gpus{"gpu 5"});
  EXPECT_EQ(gpus_of(with({{"CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb"}}, {{"gpu", "0"}})),
            Gpus{"GPU-aa"});
  EXPECT_EQ(gpus_of(with({}, {{"gpu", "3"}})), Gpus{"gpu 3"});
  EXPECT_EQ(gpus_of(with({{"CUDA_VISIBLE_DEVICES", "0"}}, {{"gpu", "3"}})), Gpus{"gpu 3"});
  // An Xid's PCI address is the physical GPU, whatever else is said.
  EXPECT_EQ(gpus_of(with({{"SLURM_JOB_GPUS", "2,3"}}, {{"pci", "0000:3b:00"}, {"gpu", "0"}})),
            Gpus{"pci 0000:3b:00"});
}

class CollectStats : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stats_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    m_dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }

  void run(const std::string& name, const std::string& host, const std::string& label,
           const std::string& ended) {
    report::RunReport r;
    r.host = host;
    r.started = r.ended = ended;
    model::Verdict v;
    v.label = label;
    v.rule = label + "-rule";
    r.verdict = v;
    std::filesystem::create_directories(m_dir + "/" + name);
    ASSERT_TRUE(report::save(m_dir + "/" + name + "/report.json", r));
  }

  std::string m_dir;
};

TEST_F(CollectStats, CountsEachLogDirOnceAndKeepsTheLatestAsExample) {
  run("a", "n1", "gpu_lost", "2026-11-30T10:00:00+00:00");
  run("b", "n1", "gpu_lost", "2026-11-30T12:00:00+02:00");  // 10:00 UTC too: a tie
  run("c", "n1", "gpu_ecc", "2026-11-30T09:00:00+00:00");
  run("d", "n2", "gpu_lost", "2026-11-29T09:00:00+00:00");
  run("e", "n2", "success", "2026-11-30T09:00:00+00:00");
  Stats s = collect_stats({m_dir, m_dir}, std::nullopt);
  EXPECT_EQ(s.log_dirs.size(), 1u);
  EXPECT_EQ(s.runs, 5);
  auto drain = drain_candidates(s);
  ASSERT_EQ(drain.size(), 1u);
  EXPECT_EQ(drain[0].first, "n1");
  EXPECT_EQ(drain[0].second->count, 3);
  // Of two runs at the same time, the first in the directory's order.
  EXPECT_EQ(drain[0].second->last.run_dir, m_dir + "/a");
  auto causes = top_causes(s);
  ASSERT_EQ(causes.size(), 2u);  // success is no cause
  EXPECT_EQ(causes[0].first, std::make_pair(std::string("gpu_lost"), std::string("gpu_lost-rule")));
  EXPECT_EQ(causes[0].second->count, 3);

  // Ended before the window: counted apart, whatever its offset says.
  Stats recent = collect_stats({m_dir}, *util::parse_iso8601("2026-11-30T09:30:00Z"));
  EXPECT_EQ(recent.runs, 2);
  EXPECT_EQ(recent.outside_window, 3);
  EXPECT_TRUE(drain_candidates(recent).size() == 1 &&
              drain_candidates(recent)[0].second->count == 2);
}

TEST_F(CollectStats, AnUnreadableLogDirIsNamed) {
  Stats s = collect_stats({m_dir + "/absent"}, std::nullopt);
  ASSERT_EQ(s.unreadable_dirs.size(), 1u);
  EXPECT_NE(s.unreadable_dirs[0].find("absent"), std::string::npos);
  EXPECT_EQ(s.runs, 0);
}

}  // namespace
}  // namespace cli
