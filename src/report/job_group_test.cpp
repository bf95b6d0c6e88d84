#include "report/job_group.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "util/fd.hpp"

namespace {

using report::finish_member;
using report::group_identity;
using report::GroupIdentity;
using report::MemberRecord;
using report::register_member;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gpualert-group-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

GroupIdentity slurm_task(int rank, int size) {
  std::map<std::string, std::string> env = {{"SLURM_JOB_ID", "17"},
                                            {"SLURM_STEP_ID", "0"},
                                            {"SLURM_PROCID", std::to_string(rank)},
                                            {"SLURM_STEP_NUM_TASKS", std::to_string(size)}};
  return *group_identity(env, "", std::nullopt, "n" + std::to_string(rank), 100 + rank);
}

MemberRecord ending(const GroupIdentity& id, bool failed, const std::string& label) {
  MemberRecord r;
  r.rank = id.rank;
  r.host = id.host;
  r.run_dir = "/logs/run-" + id.member;
  r.failed = failed;
  r.label = label;
  r.ending = failed ? "exit 1 after 2s" : "exit 0 after 5s";
  r.cause = failed ? "ValueError: rank 1 broke" : "";
  return r;
}

TEST(JobGroup, SlurmStepOfSeveralTasksIsAGroupOneTaskIsNot) {
  auto id = slurm_task(1, 2);
  EXPECT_EQ(id.key, "slurm-17.0");
  EXPECT_EQ(id.rank, "1");
  EXPECT_EQ(id.member, "1");
  EXPECT_EQ(id.noun, "task");
  EXPECT_EQ(id.size, 2);
  std::map<std::string, std::string> one = {
      {"SLURM_JOB_ID", "17"}, {"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}};
  EXPECT_FALSE(group_identity(one, "", std::nullopt, "n", 1));
  EXPECT_FALSE(group_identity({{"SLURM_JOB_ID", "17"}}, "", std::nullopt, "n", 1));
}

TEST(JobGroup, ExplicitKeyTakesTheLaunchersRankElseHostAndPid) {
  auto ranked = group_identity({{"RANK", "3"}, {"WORLD_SIZE", "4"}}, "exp-1", std::nullopt, "h", 9);
  ASSERT_TRUE(ranked);
  EXPECT_EQ(ranked->key, "exp-1");
  EXPECT_EQ(ranked->member, "3");
  EXPECT_EQ(ranked->size, 4);
  auto plain = group_identity({}, "exp-1", 2, "h", 9);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->rank, "");
  EXPECT_EQ(plain->member, "h-9");
  EXPECT_EQ(plain->size, 2);
}

TEST(JobGroup, FirstFailureSendsHealthyRankDoesNotAndNamesTheOther) {
  TempDir t;
  auto r0 = slurm_task(0, 2), r1 = slurm_task(1, 2);
  std::string dir = report::group_dir(t.path, r0.key);
  auto reg0 = register_member(dir, r0, "/logs/run-0", 100);
  auto reg1 = register_member(dir, r1, "/logs/run-1", 101);
  ASSERT_TRUE(reg0) << reg0.error();
  ASSERT_TRUE(reg1);
  auto d1 = finish_member(dir, r1, ending(r1, true, "script_error"), reg1);
  EXPECT_TRUE(d1.send);
  EXPECT_EQ(d1.role, "first_failure");
  EXPECT_EQ(d1.own_why, "");
  ASSERT_EQ(d1.others.size(), 1u);
  EXPECT_EQ(d1.others[0], "task 0 on n0: still running; run dir /logs/run-0");
  auto d0 = finish_member(dir, r0, ending(r0, false, "success"), reg0);
  EXPECT_FALSE(d0.send);
  EXPECT_EQ(d0.role, "covered");
  EXPECT_EQ(d0.covered_by, "1");
}

TEST(JobGroup, LaterFailuresAreCoveredByTheFirst) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "k");
  std::vector<GroupIdentity> ids = {slurm_task(0, 3), slurm_task(1, 3), slurm_task(2, 3)};
  std::vector<util::Status> regs;
  for (auto& id : ids) {
    regs.push_back(register_member(dir, id, "/logs/run-" + id.member, 1));
  }
  EXPECT_FALSE(finish_member(dir, ids[0], ending(ids[0], false, "success"), regs[0]).send);
  auto first = finish_member(dir, ids[2], ending(ids[2], true, "cuda_oom"), regs[2]);
  EXPECT_TRUE(first.send);
  EXPECT_EQ(first.others[0], "task 0 on n0: success (exit 0 after 5s); run dir /logs/run-0");
  auto second = finish_member(dir, ids[1], ending(ids[1], true, "comm_timeout"), regs[1]);
  EXPECT_FALSE(second.send);
  EXPECT_EQ(second.covered_by, "2");
}

TEST(JobGroup, AllSucceededLastOneSendsOnce) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "k");
  auto r0 = slurm_task(0, 2), r1 = slurm_task(1, 2);
  auto reg0 = register_member(dir, r0, "/a", 1), reg1 = register_member(dir, r1, "/b", 2);
  auto d0 = finish_member(dir, r0, ending(r0, false, "success"), reg0);
  EXPECT_FALSE(d0.send);
  EXPECT_EQ(d0.role, "not_last");
  auto d1 = finish_member(dir, r1, ending(r1, false, "success"), reg1);
  EXPECT_TRUE(d1.send);
  EXPECT_EQ(d1.role, "all_succeeded");
  // The same ending reported again (a sweep after the wrapper) sends nothing more.
  EXPECT_FALSE(finish_member(dir, r0, ending(r0, false, "success"), reg0).send);
}

TEST(JobGroup, AMemberThatCannotSeeTheOthersSendsItsOwnMarked) {
  TempDir a, b;
  auto r0 = slurm_task(0, 2), r1 = slurm_task(1, 2);
  std::string da = report::group_dir(a.path, r0.key), db = report::group_dir(b.path, r1.key);
  auto reg0 = register_member(da, r0, "/a", 1), reg1 = register_member(db, r1, "/b", 2);
  auto d1 = finish_member(db, r1, ending(r1, true, "script_error"), reg1);
  EXPECT_TRUE(d1.send);
  EXPECT_NE(d1.own_why.find("only 1 of the group's 2 tasks"), std::string::npos) << d1.own_why;
  ASSERT_EQ(d1.others.size(), 1u);
  EXPECT_NE(d1.others[0].find("task 0: not seen in"), std::string::npos) << d1.others[0];
  auto d0 = finish_member(da, r0, ending(r0, false, "success"), reg0);
  EXPECT_TRUE(d0.send);
  EXPECT_EQ(d0.role, "own");
  EXPECT_FALSE(d0.own_why.empty());
}

TEST(JobGroup, AnUnusableDirectoryStillSends) {
  TempDir t;
  std::string blocker = t.path + "/file";
  ASSERT_EQ(::close(::creat(blocker.c_str(), 0644)), 0);
  auto r1 = slurm_task(1, 2);
  std::string dir = blocker + "/groups";
  auto reg = register_member(dir, r1, "/b", 2);
  EXPECT_FALSE(reg);
  auto d = finish_member(dir, r1, ending(r1, false, "success"), reg);
  EXPECT_TRUE(d.send);
  EXPECT_EQ(d.role, "own");
  EXPECT_NE(d.own_why.find("could not use the group directory"), std::string::npos);
}

TEST(JobGroup, AMemberKilledBeforeItsEndingLeavesNoSuccessNotice) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "k");
  auto r0 = slurm_task(0, 2), r1 = slurm_task(1, 2);
  auto reg0 = register_member(dir, r0, "/a", 1);
  ASSERT_TRUE(register_member(dir, r1, "/b", 2));  // then SIGKILLed: no ending
  auto d0 = finish_member(dir, r0, ending(r0, false, "success"), reg0);
  EXPECT_FALSE(d0.send);
  EXPECT_EQ(d0.role, "not_last");
}

TEST(JobGroup, AClaimNotMarkedSentNamesItsRunAndIsTakenOverOnce) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "k");
  auto r0 = slurm_task(0, 2), r1 = slurm_task(1, 2);
  auto reg0 = register_member(dir, r0, "/a", 1), reg1 = register_member(dir, r1, "/b", 2);
  EXPECT_FALSE(report::abandoned_claim_run_dir(dir));  // no claim yet
  auto sender = finish_member(dir, r1, ending(r1, true, "script_error"), reg1);
  ASSERT_TRUE(sender.send);
  EXPECT_FALSE(report::abandoned_claim_run_dir(dir));  // its maker holds it, sending
  report::GroupDecision died = sender;
  sender.claim_lock.reset();
  died.claim_lock.reset();  // the claimer's process ended without marking it sent
  EXPECT_EQ(report::abandoned_claim_run_dir(dir), "/logs/run-1");
  EXPECT_TRUE(report::take_over(dir));
  EXPECT_FALSE(report::take_over(dir));
  report::mark_sent(dir, died);
  EXPECT_FALSE(report::abandoned_claim_run_dir(dir));
  // The claimer's own run reported again (a sweep after its wrapper died) sends it.
  EXPECT_TRUE(finish_member(dir, r1, ending(r1, true, "script_error"), reg1).send);
  EXPECT_FALSE(finish_member(dir, r0, ending(r0, true, "comm_timeout"), reg0).send);
}

// A run directory whose wrapper is alive: its output.log locked, as run_dir.cpp does.
struct LiveRun {
  std::string dir;
  util::UniqueFd log;
  explicit LiveRun(const std::string& d) : dir(d) {
    std::filesystem::create_directories(d);
    log.reset(::open((d + "/output.log").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    EXPECT_EQ(::flock(log.get(), LOCK_EX | LOCK_NB), 0);
  }
  void end() { log.reset(); }
};

TEST(JobGroup, AKeyUsedAgainAfterItsGroupEndedStartsANewGroup) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "exp-42");
  auto a0 = *group_identity({{"RANK", "0"}}, "exp-42", 2, "h", 1);
  auto a1 = *group_identity({{"RANK", "1"}}, "exp-42", 2, "h", 2);
  LiveRun run0(t.path + "/r0"), run1(t.path + "/r1");
  auto reg0 = register_member(dir, a0, run0.dir, 1), reg1 = register_member(dir, a1, run1.dir, 2);
  ASSERT_TRUE(finish_member(dir, a1, ending(a1, true, "script_error"), reg1).send);
  run1.end();
  // A member registering while another still runs joins the same group.
  LiveRun late(t.path + "/late");
  auto d_late = *group_identity({{"RANK", "1"}}, "exp-42", 2, "h", 5);
  ASSERT_TRUE(register_member(dir, d_late, late.dir, 5));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notice"));
  EXPECT_FALSE(finish_member(dir, a0, ending(a0, false, "success"), reg0).send);
  run0.end();
  late.end();
  // Every wrapper gone: the next runs with the key are a new group, whose failure is sent.
  LiveRun next0(t.path + "/n0"), next1(t.path + "/n1");
  auto n0 = register_member(dir, a0, next0.dir, 3);
  auto n1 = register_member(dir, a1, next1.dir, 4);
  ASSERT_TRUE(n1) << n1.error();
  EXPECT_FALSE(std::filesystem::exists(dir + "/notice"));
  auto d = finish_member(dir, a1, ending(a1, true, "cuda_oom"), n1);
  EXPECT_TRUE(d.send);
  EXPECT_EQ(d.role, "first_failure");
  EXPECT_EQ(d.own_why, "");
  EXPECT_EQ(report::member_run_dir(dir, "0"), next0.dir);
}

TEST(JobGroup, OneHeldNoticePerGroup) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "k");
  EXPECT_TRUE(report::first_to_hold(dir));
  EXPECT_FALSE(report::first_to_hold(dir));
  std::string blocker = t.path + "/file";
  ASSERT_EQ(::close(::creat(blocker.c_str(), 0644)), 0);
  EXPECT_TRUE(report::first_to_hold(blocker + "/g"));  // unusable: each keeps its own
}

TEST(ArrayDigest, TheLastMemberToEndSendsOneDigestOfAll) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "array-17");
  auto member = [](int index, bool failed) {
    MemberRecord r;
    r.member = std::to_string(index);
    r.failed = failed;
    r.label = failed ? "script_error" : "success";
    r.run_dir = "/logs/m" + std::to_string(index);
    return r;
  };
  for (int i : {3, 0, 1}) {
    auto d = report::finish_array_member(dir, 4, member(i, i % 2 == 1));
    ASSERT_TRUE(d) << d.error();
    EXPECT_FALSE(d->send);
  }
  auto last = report::finish_array_member(dir, 4, member(2, false));
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->send);
  ASSERT_EQ(last->members.size(), 4u);
  EXPECT_EQ(last->members[1].member, "1");
  EXPECT_TRUE(last->members[1].failed);
  EXPECT_EQ(last->members[3].run_dir, "/logs/m3");
  // A member reported again (the sweep after its wrapper) sends no second digest.
  auto again = report::finish_array_member(dir, 4, member(3, true));
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->send);
}

// Real processes ending at the same moment: exactly one of them sends.
void race(bool failed, int n) {
  TempDir t;
  std::string dir = report::group_dir(t.path, "race");
  std::vector<GroupIdentity> ids;
  for (int i = 0; i < n; ++i) {
    ids.push_back(slurm_task(i, n));
    ASSERT_TRUE(register_member(dir, ids.back(), "/r" + std::to_string(i), i));
  }
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> kids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      char c;
      (void)::read(go[0], &c, 1);  // all start together when the pipe closes
      auto d = finish_member(dir, ids[i], ending(ids[i], failed, failed ? "x" : "success"),
                             util::ok_status());
      std::_Exit(d.send ? 10 : 0);
    }
    kids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  int senders = 0;
  for (pid_t pid : kids) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st));
    senders += WEXITSTATUS(st) == 10;
  }
  EXPECT_EQ(senders, 1) << (failed ? "failures" : "successes");
}

TEST(JobGroup, MembersEndingTogetherSendExactlyOne) {
  for (int round = 0; round < 5; ++round) {
    race(true, 8);
    race(false, 8);
  }
}

}  // namespace
