// notify/mime.hpp: a notice as one RFC 5322 message, written directly.
//
// The outbox holds the complete message before any delivery is attempted (so that
// `outbox flush` sends exactly what was saved, and a mail reader can open it);
// delivery (transport.cpp) uploads these bytes unchanged through libcurl's SMTP.
//
// Structure: multipart/mixed { multipart/alternative { text/plain, text/html },
// attachments... }, the HTML in a multipart/related with its chart when there is
// one. Text parts are UTF-8 in quoted-printable, the chart and attachments base64
// in 76-character lines. Header values are sanitised and RFC 2047-encoded here.
#pragma once

#include <string>
#include <vector>

#include "notify/attachments.hpp"
#include "util/result.hpp"

namespace notify {

struct MailParts {
  std::string from;
  std::vector<std::string> to;  // empty: "To: undisclosed-recipients:;"
  std::string subject;          // plain UTF-8; sanitised and encoded here
  std::string text, html;
  std::vector<Attachment> attachments;     // only those with attached == true are included
  std::string message_id;                  // without angle brackets; generated when empty
  std::vector<std::string> extra_headers;  // "X-Gpualert-Run: ..." (sanitised here)
  // A PNG the HTML part shows as cid:k_gpu_chart_cid (notify/gpu_chart.hpp); with it
  // the HTML part becomes multipart/related { text/html, image/png }.
  std::string inline_png;
};

// The message's bytes, CRLF line ends. Does not fail today; Result leaves room.
util::Result<std::string> render_message(const MailParts& parts);

// The message with "To: undisclosed-recipients:;" replaced by `to` (unchanged
// when it has other recipients already, or `to` is empty).
std::string with_recipients(std::string message, const std::vector<std::string>& to);

// RFC 5322 date of now, e.g. "Sun, 29 Nov 2026 18:40:00 +0100".
std::string rfc5322_date();
// A unique Message-ID (no brackets): "<time>.<pid>.<random>@<host>".
std::string new_message_id();

}  // namespace notify
