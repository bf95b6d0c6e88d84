#include "notify/mime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "notify/log_excerpt.hpp"
#include "util/fd.hpp"
#include "util/text.hpp"

namespace notify {
namespace {

TEST(Mime, RendersMixedAlternativeAndAttachments) {
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
  EXPECT_NE(s.find("\r\n\r\nAAEC/w==\r\n"), std::string::npos);  // base64 of 00 01 02 ff
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

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t nl; (nl = s.find("\r\n", at)) != std::string::npos; at = nl + 2) {
    out.push_back(s.substr(at, nl - at));
  }
  return out;
}

TEST(Mime, QuotedPrintableEncodesWhatItMustAndWrapsAt76) {
  MailParts p;
  p.subject = "qp";
  p.text = "a=b\ntrailing  \n" + std::string(200, 'y') + "\ncaf\xC3\xA9\r\nbare\rcr\n";
  p.html = "x";
  auto m = render_message(p);
  ASSERT_TRUE(m);
  EXPECT_NE(m->find("\r\na=3Db\r\ntrailing =20\r\n"), std::string::npos) << *m;
  EXPECT_NE(m->find("\r\ncaf=C3=A9\r\nbare=0Dcr\r\n"), std::string::npos) << *m;
  EXPECT_NE(m->find(std::string(75, 'y') + "=\r\n"), std::string::npos);  // a soft break
  for (const auto& line : lines_of(*m)) {
    EXPECT_LE(line.size(), 76u) << line;
  }
  size_t bare_lf = 0;  // no LF without its CR anywhere
  for (size_t i = 0; i < m->size(); ++i) {
    bare_lf += (*m)[i] == '\n' && (i == 0 || (*m)[i - 1] != '\r');
  }
  EXPECT_EQ(bare_lf, 0u);
}

TEST(Mime, Base64In76CharacterLinesAndTheChartAsARelatedPart) {
  MailParts p;
  p.subject = "b64";
  p.text = "t";
  p.html = "<img src=\"cid:x\">";
  p.inline_png = std::string(1000, '\x89');
  Attachment a;
  a.name = "w.bin";
  a.attached = true;
  a.data = std::string(500, '\0');
  p.attachments = {a};
  auto m = render_message(p);
  ASSERT_TRUE(m);
  const std::string full = util::base64_encode(a.data);
  EXPECT_NE(m->find("\r\n" + full.substr(0, 76) + "\r\n" + full.substr(76, 76) + "\r\n"),
            std::string::npos);
  EXPECT_NE(m->find("Content-Type: multipart/related; boundary="), std::string::npos);
  EXPECT_NE(m->find("Content-ID: <"), std::string::npos);
  EXPECT_NE(m->find("Content-Type: application/octet-stream; name=\"w.bin\""), std::string::npos);
  EXPECT_NE(m->find("Content-Disposition: attachment; filename=\"w.bin\""), std::string::npos);
  // Three multiparts, three distinct boundaries, each closed once.
  std::vector<std::string> boundaries;
  for (size_t at = 0; (at = m->find("boundary=\"", at)) != std::string::npos;) {
    at += 10;
    boundaries.push_back(m->substr(at, m->find('"', at) - at));
  }
  ASSERT_EQ(boundaries.size(), 3u);
  for (const auto& b : boundaries) {
    EXPECT_EQ(std::count(boundaries.begin(), boundaries.end(), b), 1);
    size_t close = m->find("\r\n--" + b + "--\r\n");
    ASSERT_NE(close, std::string::npos) << b;
    EXPECT_EQ(m->find("\r\n--" + b + "--\r\n", close + 1), std::string::npos);
  }
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
