#include "notify/attachments.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>

namespace notify {
namespace {

TEST(Budget, AttachesInOrderWhileThereIsRoom) {
  auto plan = plan_budget(encoded_size(60) + encoded_size(40),
                          {{"a", "/w/a", 60, ""}, {"b", "/w/b", 50, ""}, {"c", "/w/c", 40, ""}});
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_TRUE(plan[0].attached);
  EXPECT_FALSE(plan[1].attached);
  EXPECT_NE(plan[1].note.find("over budget"), std::string::npos);
  EXPECT_TRUE(plan[2].attached);  // a later, smaller file still fits
}

TEST(Budget, RejectedCandidatesKeepTheirReasonWhateverTheBudget) {
  auto plan =
      plan_budget(1u << 30, {{"l", "/w/l", 10, "symlink pointing outside the working directory"}});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_FALSE(plan[0].attached);
  EXPECT_EQ(plan[0].note, "symlink pointing outside the working directory");
}

TEST(Budget, ExactFitIsAttached) {
  auto plan = plan_budget(encoded_size(10), {{"a", "/w/a", 10, ""}, {"b", "/w/b", 1, ""}});
  EXPECT_TRUE(plan[0].attached);
  EXPECT_FALSE(plan[1].attached);
}

// Issue: the budget counted raw bytes, and a 10 MiB budget made a 13.3 MB message.
TEST(Budget, CountsTheSizeAsSentInBase64) {
  EXPECT_EQ(encoded_size(57), 78u);  // one full line: 76 characters and CRLF
  EXPECT_EQ(encoded_size(3u << 20), 4304682u);
  auto plan = plan_budget(
      10u << 20,
      {{"a", "/w/a", 3u << 20, ""}, {"b", "/w/b", 3u << 20, ""}, {"c", "/w/c", 3u << 20, ""}});
  EXPECT_TRUE(plan[0].attached);
  EXPECT_TRUE(plan[1].attached);
  EXPECT_FALSE(plan[2].attached);  // three fit raw (9 MiB), not as sent (12.3 MiB)
  for (uint64_t budget : {100u, 1000u, 10u << 20}) {
    EXPECT_LE(encoded_size(raw_for_encoded(budget)), budget);
  }
}

TEST(Budget, HeadAndTailTakeAtMostHalfTheBudget) {
  HeadTail ht = head_tail_sizes(1000u << 20, 10u << 20);
  EXPECT_EQ(ht.head, (10u << 20) / 4);
  EXPECT_EQ(ht.tail, (10u << 20) / 4);
  HeadTail small = head_tail_sizes(100, 1000);
  EXPECT_EQ(small.head + small.tail, 100u);  // never overlapping, never past the end
}

TEST(Gzip, RoundTripsAndRespectsTheLimit) {
  std::string data(100000, 'a');
  auto gz = gzip(data, 1u << 20);
  ASSERT_TRUE(gz);
  EXPECT_LT(gz->size(), 1000u);
  std::string out(data.size() + 10, '\0');
  z_stream zs{};
  inflateInit2(&zs, 15 + 16);
  zs.next_in = reinterpret_cast<Bytef*>(gz->data());
  zs.avail_in = static_cast<uInt>(gz->size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  EXPECT_EQ(out, data);
  EXPECT_FALSE(gzip(data, 10));
}

class Globs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpualert-attach-XXXXXX";
    m_root = mkdtemp(tmpl);
    m_cwd = m_root + "/cwd";
    mkdir(m_cwd.c_str(), 0755);
    write(m_cwd + "/a.json", "{}");
    write(m_cwd + "/b.json", "{\"x\":1}");
    write(m_root + "/outside.txt", "secret");
    symlink((m_root + "/outside.txt").c_str(), (m_cwd + "/link.txt").c_str());
    symlink((m_cwd + "/a.json").c_str(), (m_cwd + "/inside-link.json").c_str());
  }
  void TearDown() override { std::system(("rm -rf " + m_root).c_str()); }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  std::string m_root, m_cwd;
};

TEST_F(Globs, ExpandsInOrderAndExplainsEveryReject) {
  auto c = expand_globs(m_cwd, {"b.json", "a.json", "link.txt", "nothing-*.bin", "."});
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].name, "b.json");
  EXPECT_TRUE(c[0].rejected.empty());
  EXPECT_EQ(c[0].size, 7u);
  EXPECT_EQ(c[1].name, "a.json");
  EXPECT_NE(c[2].rejected.find("symlink pointing outside the working directory"),
            std::string::npos);
  EXPECT_EQ(c[3].rejected, "no file matched");
  EXPECT_NE(c[4].rejected.find("directory"), std::string::npos);
}

// Issue: '../../*' and '/etc/...' patterns attached files from anywhere.
TEST_F(Globs, PatternsReachOnlyCwdAndTheRunDirNamedFilesAnywhere) {
  std::string run = m_root + "/run";
  mkdir(run.c_str(), 0755);
  write(run + "/kernel.log", "xid");
  auto c = expand_globs(
      m_cwd, {"../*.txt", m_root + "/outside.*", run + "/*.log", "../outside.txt"}, {}, run);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_NE(c[0].rejected.find("outside the job's directory"), std::string::npos);
  EXPECT_NE(c[1].rejected.find("outside the job's directory"), std::string::npos);
  EXPECT_TRUE(c[2].rejected.empty()) << c[2].rejected;  // in the run directory
  EXPECT_TRUE(c[3].rejected.empty()) << c[3].rejected;  // named exactly: taken
}

TEST_F(Globs, SymlinkInsideCwdIsFineButTheSameFileIsNotAttachedTwice) {
  auto c = expand_globs(m_cwd, {"a.json", "inside-link.json"});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(c[0].rejected.empty());
  EXPECT_EQ(c[1].rejected, "already attached");
}

TEST_F(Globs, LogWithinBudgetIsGzippedWhole) {
  write(m_root + "/output.log", std::string(5000, 'x') + "\n");
  Attachment a = log_attachment(m_root + "/output.log", 1u << 20, "here");
  EXPECT_TRUE(a.attached);
  EXPECT_EQ(a.name, "output.log.gz");
  EXPECT_LT(a.size, 200u);
}

TEST_F(Globs, LogOverBudgetKeepsHeadAndTailWithANote) {
  std::string big;
  for (int i = 0; i < 20000; ++i) {
    big += std::to_string(i * 7919 % 100003) + " " + std::to_string(rand()) + "\n";
  }
  write(m_root + "/output.log", big);
  Attachment a = log_attachment(m_root + "/output.log", 16 * 1024, "/runs/x/output.log on node1");
  ASSERT_TRUE(a.attached) << a.note;
  EXPECT_EQ(a.name, "output-head-tail.log.gz");
  EXPECT_LE(a.size, 16u * 1024);
  EXPECT_NE(a.note.find("cut; the full log is /runs/x/output.log on node1"), std::string::npos)
      << a.note;
}

}  // namespace
}  // namespace notify
