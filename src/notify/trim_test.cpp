#include "notify/trim.hpp"

#include <gtest/gtest.h>

#include "notify/mime.hpp"

namespace notify {
namespace {

Attachment file(const std::string& name, size_t size) {
  Attachment a;
  a.name = name;
  a.attached = true;
  a.size = size;
  a.data.assign(size, 'x');
  a.content_type = "application/octet-stream";
  return a;
}

std::string message_with(std::vector<Attachment> attachments) {
  MailParts parts;
  parts.from = "gpualert@example.org";
  parts.to = {"me@example.org"};
  parts.subject = "FAILED";
  parts.text = "the body\n";
  parts.html = "<p>the body</p>\n";
  parts.attachments = std::move(attachments);
  auto m = render_message(parts);
  EXPECT_TRUE(m.ok());
  return m.ok() ? *m : std::string();
}

TEST(Trim, DropsAttachmentsFromTheEndUntilItFitsAndNamesThem) {
  std::string m = message_with(
      {file("output.log.gz", 1000), file("big-1.bin", 300000), file("big-2.bin", 300000)});
  auto t = trim_attachments(m, 100000, "552 5.3.4 too big");
  ASSERT_TRUE(t.has_value());
  EXPECT_LE(t->size(), 100000u);
  EXPECT_NE(t->find("output.log.gz"), std::string::npos);
  EXPECT_NE(t->find("the body"), std::string::npos);
  EXPECT_NE(t->find("big-1.bin ("), std::string::npos);  // named in the note
  EXPECT_NE(t->find("big-2.bin ("), std::string::npos);
  EXPECT_NE(t->find("552 5.3.4 too big"), std::string::npos);
  EXPECT_EQ(t->find("filename=\"big-1.bin\""), std::string::npos);
}

TEST(Trim, NoKnownLimitDropsThemAllAndNothingToDropIsNullopt) {
  std::string m = message_with({file("a.bin", 5000)});
  auto t = trim_attachments(m, 0, "552");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->find("filename=\"a.bin\""), std::string::npos);
  EXPECT_FALSE(trim_attachments(message_with({}), 0, "552").has_value());
}

}  // namespace
}  // namespace notify
