#include "util/fd.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace {

class FdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpualert-fd-XXXXXX";
    m_root = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::system(("rm -rf " + m_root).c_str()); }
  std::string m_root;
};

TEST_F(FdTest, AtomicWriteNeverFollowsAPlantedTemporaryName) {
  std::string victim = m_root + "/victim";
  std::ofstream(victim) << "precious";
  std::string target = m_root + "/report.json";
  ASSERT_EQ(::symlink(victim.c_str(), (target + ".tmp." + std::to_string(::getpid())).c_str()), 0);
  ASSERT_TRUE(util::write_file_atomic(target, "new", 0644).ok());
  EXPECT_EQ(*util::read_file(victim), "precious");
  EXPECT_EQ(*util::read_file(target), "new");
}

TEST_F(FdTest, AnAtomicFileIsMadeFirstAndReplacesThePathWhenCommitted) {
  std::string target = m_root + "/report.json";
  std::ofstream(target) << "provisional";
  auto file = util::AtomicFile::create(target);
  ASSERT_TRUE(file.ok());
  const std::string tmp = target + ".tmp." + std::to_string(::getpid());
  EXPECT_EQ(::access(tmp.c_str(), F_OK), 0);  // made now, empty
  // Another writer of the same path meanwhile (the provisional report) takes the next name.
  ASSERT_TRUE(
      util::write_file_atomic(target, "second provisional", 0644, util::Durability::replace_only)
          .ok());
  EXPECT_EQ(*util::read_file(target), "second provisional");
  ASSERT_TRUE(file->commit("final", util::Durability::replace_only).ok());
  EXPECT_EQ(*util::read_file(target), "final");
  EXPECT_NE(::access(tmp.c_str(), F_OK), 0);
  EXPECT_FALSE(file->commit("again").ok());  // once
}

TEST_F(FdTest, AnAtomicFileNeverCommittedLeavesNothing) {
  std::string target = m_root + "/report.json";
  {
    auto file = util::AtomicFile::create(target);
    ASSERT_TRUE(file.ok());
  }
  EXPECT_NE(::access(target.c_str(), F_OK), 0);
  EXPECT_NE(::access((target + ".tmp." + std::to_string(::getpid())).c_str(), F_OK), 0);
  auto in_missing_dir = util::AtomicFile::create(m_root + "/no/such/dir/report.json");
  EXPECT_FALSE(in_missing_dir.ok());
}

TEST_F(FdTest, PrivateDirIsMadePrivateAndRefusesLinks) {
  std::string dir = m_root + "/mine";
  ASSERT_TRUE(util::private_dir(dir).ok());
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ::chmod(dir.c_str(), 0777);
  ASSERT_TRUE(util::private_dir(dir).ok());
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string link = m_root + "/link";
  ASSERT_EQ(::symlink(dir.c_str(), link.c_str()), 0);
  EXPECT_FALSE(util::private_dir(link).ok());
}

}  // namespace
