#include "notify/outbox.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include "notify/deliver.hpp"
#include "util/fd.hpp"

namespace notify {
namespace {

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpualert-outbox-XXXXXX";
    m_root = mkdtemp(tmpl);
  }
  void TearDown() override { std::system(("rm -rf " + m_root).c_str()); }
  Outbox box() const { return Outbox(m_root + "/outbox", m_root + "/sent"); }
  std::string m_root;
};

TEST_F(OutboxTest, AHeldEntryIsNotClaimedUntilItsTimeAndCanBeWithdrawn) {
  Outbox ob = box();
  EntryMeta m;
  m.channel = "smtp";
  m.subject = "held";
  m.not_before = static_cast<int64_t>(std::time(nullptr)) + 300;
  auto held = ob.add(m, "Subject: held\r\n\r\nbody\r\n");
  ASSERT_TRUE(held) << held.error();
  auto list = ob.list();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].not_before, m.not_before);  // kept in the sidecar
  auto claimed = ob.claim(held->id);
  ASSERT_TRUE(claimed);
  EXPECT_FALSE(claimed->valid());  // not yet: its run may still withdraw it
  EXPECT_TRUE(ob.withdraw(held->id));
  EXPECT_TRUE(ob.list()->empty());
  EXPECT_FALSE(ob.withdraw(held->id));  // gone
  // Once its time has come, a held entry is sent like any other.
  m.not_before = static_cast<int64_t>(std::time(nullptr)) - 1;
  auto due = ob.add(m, "Subject: due\r\n\r\nbody\r\n");
  ASSERT_TRUE(due);
  auto claim_due = ob.claim(due->id);
  ASSERT_TRUE(claim_due);
  EXPECT_TRUE(claim_due->valid());
  EXPECT_FALSE(ob.withdraw(due->id));  // being delivered: it stands
}

TEST_F(OutboxTest, AddedEntryIsListedWithItsPayload) {
  Outbox ob = box();
  EntryMeta m;
  m.channel = "smtp";
  m.to = {"a@example.com"};
  m.subject = "s";
  auto added = ob.add(m, "Subject: s\r\n\r\nbody\r\n");
  ASSERT_TRUE(added) << added.error();
  auto list = ob.list();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, added->id);
  EXPECT_EQ((*list)[0].to, std::vector<std::string>{"a@example.com"});
  EXPECT_EQ(*ob.payload((*list)[0]), "Subject: s\r\n\r\nbody\r\n");
  EXPECT_EQ(access((m_root + "/outbox/tmp").c_str(), F_OK), 0);
}

TEST_F(OutboxTest, ClaimIsExclusiveAndFailuresAreRecorded) {
  Outbox ob = box();
  EntryMeta m;
  m.channel = "webhook";
  auto added = ob.add(m, "{}");
  ASSERT_TRUE(added);
  auto first = ob.claim(added->id);
  ASSERT_TRUE(first && first->valid());
  auto second = ob.claim(added->id);
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->valid());  // held by the first claim (flock is per open file)
  ASSERT_TRUE(ob.record_failure(*first, "connect: refused"));
  auto list = ob.list();
  EXPECT_EQ((*list)[0].attempts, 1);
  EXPECT_EQ((*list)[0].last_error, "connect: refused");
}

// Issue 14: a sidecar without payload was "being delivered by another process" for
// ever; a payload without sidecar was never listed; nothing was ever given up.
TEST_F(OutboxTest, SidecarWithoutPayloadIsAnErrorAndGoesToDead) {
  Outbox ob = box();
  EntryMeta m;
  m.channel = "smtp";
  auto added = ob.add(m, "x");
  ASSERT_TRUE(added);
  ASSERT_EQ(::unlink(ob.payload_path(*added).c_str()), 0);
  auto c = ob.claim(added->id);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("missing"), std::string::npos);
  EXPECT_TRUE(ob.list()->empty());
  auto dead = ob.dead();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].id, added->id);
}

TEST_F(OutboxTest, PayloadWithoutSidecarIsGivenUpOnceOld) {
  Outbox ob = box();
  EntryMeta m;
  m.channel = "webhook";
  auto added = ob.add(m, "{}");
  ASSERT_TRUE(added);
  std::string meta = m_root + "/outbox/new/" + added->id + ".meta";
  ASSERT_EQ(::unlink(meta.c_str()), 0);
  ob.tidy();
  EXPECT_TRUE(ob.dead().empty());  // may be an add() in progress
  struct timespec old[2] = {{std::time(nullptr) - 3600, 0}, {std::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, ob.payload_path(*added).c_str(), old, 0), 0);
  ob.tidy();
  ASSERT_EQ(ob.dead().size(), 1u);
  EXPECT_NE(ob.dead()[0].last_error.find("without its sidecar"), std::string::npos);
}

TEST_F(OutboxTest, GivenUpAfterTheAttemptLimit) {
  Outbox ob = box();
  EntryMeta m;
  m.channel = "smtp";
  auto added = ob.add(m, "x");
  ASSERT_TRUE(added);
  for (int i = 0; i < k_max_attempts; ++i) {
    auto c = ob.claim(added->id);
    ASSERT_TRUE(c && c->valid()) << i;
    ASSERT_TRUE(ob.record_failure(*c, "550 refused"));
  }
  EXPECT_TRUE(ob.list()->empty());
  ASSERT_EQ(ob.dead().size(), 1u);
  EXPECT_NE(ob.dead()[0].last_error.find("given up after 20 attempts"), std::string::npos);
}

TEST_F(OutboxTest, SentEntryLeavesTheOutboxAndCannotBeClaimedAgain) {
  Outbox ob = box();
  EntryMeta m;
  m.channel = "smtp";
  auto added = ob.add(m, "x");
  ASSERT_TRUE(added);
  {
    auto c = ob.claim(added->id);
    ASSERT_TRUE(c && c->valid());
    ASSERT_TRUE(ob.mark_sent(*c));
  }
  EXPECT_TRUE(ob.list()->empty());
  EXPECT_FALSE(ob.claim(added->id)->valid());
  EXPECT_EQ(access((m_root + "/sent/" + added->id + ".eml").c_str(), F_OK), 0);
}

TEST_F(OutboxTest, IsolatedDeliveryToARefusedPortKeepsTheEntryWithTheReason) {
  // A port on 127.0.0.1 that nobody listens on.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(s, reinterpret_cast<sockaddr*>(&addr), len);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  close(s);
  config::Config c;
  c.smtp_url = "smtp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  c.to = {"a@example.com"};
  Outbox ob = box();
  EntryMeta m;
  m.channel = "smtp";
  auto added = ob.add(m, "Subject: s\r\n\r\nbody\r\n");
  ASSERT_TRUE(added);
  auto results = deliver_isolated(c, ob, {added->id}, std::chrono::seconds(5));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].ok);
  EXPECT_NE(results[0].reason.find("connect"), std::string::npos) << results[0].reason;
  auto list = ob.list();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].attempts, 1);
}

TEST_F(OutboxTest, IsolatedDeliveryIsKilledAtTheDeadline) {
  // Listens, never accepts nor answers: the kernel completes the handshake, curl waits for a
  // greeting.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(s, reinterpret_cast<sockaddr*>(&addr), len);
  listen(s, 4);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  util::UniqueFd keep(s);
  config::Config c;
  c.smtp_url = "smtp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  c.to = {"a@example.com"};
  Outbox ob = box();
  EntryMeta m;
  m.channel = "smtp";
  auto added = ob.add(m, "x\r\n");
  auto start = std::chrono::steady_clock::now();
  auto results = deliver_isolated(c, ob, {added->id}, std::chrono::milliseconds(800));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::milliseconds(1300));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].ok);
  EXPECT_EQ(ob.list()->size(), 1u);
  EXPECT_FALSE((*ob.list())[0].last_error.empty());
}

}  // namespace
}  // namespace notify

namespace notify {
namespace {}  // namespace
}  // namespace notify
