#include "notify/mime.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "notify/log_excerpt.hpp"
#include "util/fd.hpp"

namespace notify {
namespace {

TEST(Mime, RendersMixedAlternativeAndAttachmentsThroughLibcurl) {
  MailParts p;
  p.from = "gpualert@host";
  p.to = {"a@example.com", "b@example.com"};
  p.subject = "caf\xC3\xA9 run\r\nBcc: evil@x";
  p.text = "line one\nline two\n";
  p.html = "<p>hi</p>\n";
  Attachment a;
  a.name = "data.bin";
  a.attached = true;
  a.data = std::string("\x00\x01\x02\xff", 4);
  a.content_type = "application/octet-stream";
  Attachment skipped;
  skipped.name = "big.bin";
  p.attachments = {a, skipped};
  auto m = render_message(p);
  ASSERT_TRUE(m) << m.error();
  const std::string& s = *m;
  std::string headers = s.substr(0, s.find("\r\n\r\n"));
  EXPECT_NE(headers.find("Content-Type: multipart/mixed; boundary="), std::string::npos);
  EXPECT_NE(headers.find("To: a@example.com, b@example.com"), std::string::npos);
  EXPECT_NE(headers.find("Subject: =?UTF-8?Q?caf=C3=A9_run_Bcc=3A_evil=40x?="), std::string::npos)
      << headers;
  EXPECT_EQ(headers.find("\r\nBcc:"), std::string::npos);
  EXPECT_NE(headers.find("Message-ID: <"), std::string::npos);
  EXPECT_NE(headers.find("Date: "), std::string::npos);
  EXPECT_NE(s.find("Content-Type: multipart/alternative"), std::string::npos);
  EXPECT_NE(s.find("Content-Type: text/plain; charset=utf-8"), std::string::npos);
  EXPECT_NE(s.find("Content-Type: text/html; charset=utf-8"), std::string::npos);
  EXPECT_NE(s.find("line one\r\nline two"), std::string::npos);  // CRLF, not =0A
  EXPECT_NE(s.find("filename=\"data.bin\""), std::string::npos);
  EXPECT_NE(s.find("AAEC/w=="), std::string::npos);  // libcurl's base64 of 00 01 02 ff
  EXPECT_EQ(s.find("big.bin"), std::string::npos);
  EXPECT_EQ(s.substr(s.size() - 2), "\r\n");
}

TEST(Mime, DotStuffingIsUndoneSoTheSavedMessageIsTheOriginal) {
  MailParts p;
  p.subject = "dots";
  p.text.assign(".\n..\n.leading dot\n");
  p.html = "x";
  auto m = render_message(p);
  ASSERT_TRUE(m);
  EXPECT_NE(m->find("\r\n.\r\n..\r\n.leading dot\r\n"), std::string::npos) << *m;
}

TEST(Tail, DropsWrapperLinesCollapsesRedrawsAndKeepsTheLastLines) {
  std::string raw = "#gpualert# header\n";
  for (int i = 1; i <= 100; ++i) {
    raw += "line " + std::to_string(i) + "\n";
  }
  raw += "\x1b[33m10%\r50%\r100%\x1b[0m\n#gpualert# ---- job output ends ----\n";
  bool cut = false;
  auto tail = tail_lines(raw, 60, &cut);
  ASSERT_EQ(tail.size(), 60u);
  EXPECT_TRUE(cut);
  EXPECT_EQ(tail.front(), "line 42");
  EXPECT_EQ(tail.back(), "100%");
}

// Issue: the tail was empty when the job's last line was longer than the window
// (a '\r' progress bar killed mid-epoch).
TEST(Tail, LastLineLongerThanTheWindowShowsItsLastRedraw) {
  char tmpl[] = "/tmp/gpualert-tail-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string path = dir + "/output.log";
  std::string log = "#gpualert# header\nepoch 1\n";
  for (int i = 0; log.size() < 2 * k_tail_window; ++i) {
    log += "\rstep " + std::to_string(i) + "/99999 loss 2.31";
  }
  log += "\rstep last/99999 loss 9.99\n#gpualert# ---- job output ends ----\n";
  ASSERT_TRUE(util::write_file_atomic(path, log).ok());
  LogExcerpt ex = read_excerpt(path, dir + "/kernel.log", {});
  ASSERT_FALSE(ex.tail.empty());
  EXPECT_EQ(ex.tail.back(), "step last/99999 loss 9.99");
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace notify
