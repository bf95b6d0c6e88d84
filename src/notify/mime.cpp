#include "notify/mime.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <random>

#include "notify/gpu_chart.hpp"
#include "notify/text_filters.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

constexpr size_t k_line = 76;  // RFC 2045's limit for encoded lines, CRLF excluded

std::string address_header(const std::vector<std::string>& addrs) {
  // Folded after each comma once a line would pass 78 characters (RFC 5322 2.2.3).
  std::string out;
  size_t line = 4;  // "To: "
  for (const auto& a : addrs) {
    std::string one = sanitize_header_value(a, 254);
    if (!out.empty()) {
      out += ',';
      if (line + 2 + one.size() > 78) {
        out += "\r\n";
        line = 0;
      }
      out += ' ';
      line += 2;
    }
    out += one;
    line += one.size();
  }
  return out.empty() ? "undisclosed-recipients:;" : out;
}

// Quoted-printable (RFC 2045 6.7): "\n" and "\r\n" are the text's line breaks and
// become CRLF; '=', controls, bytes over 126 and a space or tab before a line break
// are encoded; longer lines get soft breaks so none passes 76 characters.
std::string quoted_printable(std::string_view text) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  size_t line = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const bool crlf = c == '\r' && i + 1 < text.size() && text[i + 1] == '\n';
    if (c == '\n' || crlf) {
      out += "\r\n";
      line = 0;
      i += crlf ? 1 : 0;
      continue;
    }
    const bool before_break = i + 1 == text.size() || text[i + 1] == '\n' ||
                              (text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n');
    const bool literal =
        (c >= 33 && c <= 126 && c != '=') || ((c == ' ' || c == '\t') && !before_break);
    const size_t width = literal ? 1 : 3;
    if (line + width > k_line - 1) {  // room for the soft break's '='
      out += "=\r\n";
      line = 0;
    }
    if (literal) {
      out += static_cast<char>(c);
    } else {
      out += '=';
      out += k_hex[c >> 4];
      out += k_hex[c & 15];
    }
    line += width;
  }
  return out;
}

std::string base64_lines(std::string_view bytes) {
  std::string flat = util::base64_encode(bytes);
  std::string out;
  out.reserve(flat.size() + flat.size() / k_line * 2 + 2);
  for (size_t at = 0; at < flat.size(); at += k_line) {
    out.append(flat, at, k_line);
    out += "\r\n";
  }
  return out;
}

// A MIME entity being written: its headers, then its body or its parts.
struct Entity {
  std::vector<std::string> headers;
  std::string body;  // encoded, CRLF line ends; empty for a multipart
  std::vector<Entity> parts;
  std::string subtype;  // "mixed", "alternative", "related" for a multipart
};

Entity text_part(std::string_view text, const char* subtype) {
  Entity e;
  e.headers = {std::string("Content-Type: text/") + subtype + "; charset=utf-8",
               "Content-Transfer-Encoding: quoted-printable"};
  e.body = quoted_printable(text);
  return e;
}

Entity multipart(const char* subtype, std::vector<Entity> parts) {
  Entity e;
  e.subtype = subtype;
  e.parts = std::move(parts);
  return e;
}

class Writer {
 public:
  // Boundaries hold "=_", which neither quoted-printable (where '=' is followed by hex
  // digits or a line break) nor base64 can produce, so no part's body can contain one;
  // the random part keeps a resent or forwarded message's boundaries distinct.
  Writer() {
    std::random_device rd;
    char buf[40];
    std::snprintf(buf, sizeof buf, "=_%08x%08x", rd(), rd());
    m_prefix = buf;
  }

  void write(const Entity& e, std::string& out) {
    if (e.parts.empty()) {
      for (const auto& h : e.headers) {
        out += h + "\r\n";
      }
      out += "\r\n";
      out += e.body;
      return;
    }
    const std::string boundary = m_prefix + "_" + std::to_string(m_next++);
    for (const auto& h : e.headers) {
      out += h + "\r\n";
    }
    out += "Content-Type: multipart/" + e.subtype + "; boundary=\"" + boundary + "\"\r\n\r\n";
    for (const auto& part : e.parts) {
      out += "--" + boundary + "\r\n";
      write(part, out);
      out += "\r\n";  // belongs to the delimiter: a body's own last CRLF stays its own
    }
    out += "--" + boundary + "--\r\n";
  }

 private:
  std::string m_prefix;
  unsigned m_next = 0;
};

}  // namespace

std::string rfc5322_date() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char buf[64];
  // The C locale's day and month names, as RFC 5322 requires; %z is +hhmm.
  static const char* k_days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* k_months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char zone[16];
  std::strftime(zone, sizeof zone, "%z", &tm);
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d %s", k_days[tm.tm_wday],
                tm.tm_mday, k_months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec, zone);
  return buf;
}

std::string new_message_id() {
  std::random_device rd;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld.%d.%08x", static_cast<long long>(std::time(nullptr)),
                ::getpid(), rd());
  return std::string(buf) + "@" + util::safe_file_component(util::hostname(), 64);
}

std::string with_recipients(std::string message, const std::vector<std::string>& to) {
  static const std::string k_none = "\r\nTo: undisclosed-recipients:;\r\n";
  size_t head_end = message.find("\r\n\r\n");
  size_t at = message.find(k_none);
  if (to.empty() || at == std::string::npos || at >= head_end) {
    return message;
  }
  message.replace(at, k_none.size(), "\r\nTo: " + address_header(to) + "\r\n");
  return message;
}

util::Result<std::string> render_message(const MailParts& parts) {
  Entity html = text_part(parts.html, "html");
  if (!parts.inline_png.empty()) {
    Entity png;
    png.headers = {"Content-Type: image/png", "Content-Transfer-Encoding: base64",
                   std::string("Content-ID: <") + k_gpu_chart_cid + ">",
                   "Content-Disposition: inline; filename=\"gpus.png\""};
    png.body = base64_lines(parts.inline_png);
    html = multipart("related", {std::move(html), std::move(png)});
  }
  std::vector<Entity> top;
  top.push_back(multipart("alternative", {text_part(parts.text, "plain"), std::move(html)}));
  for (const auto& a : parts.attachments) {
    if (!a.attached) {
      continue;
    }
    const std::string name = util::safe_file_component(a.name, 100);  // [A-Za-z0-9._-] only
    const std::string type = sanitize_header_value(
        a.content_type.empty() ? "application/octet-stream" : a.content_type, 100);
    Entity e;
    e.headers = {"Content-Type: " + type + "; name=\"" + name + "\"",
                 "Content-Disposition: attachment; filename=\"" + name + "\"",
                 "Content-Transfer-Encoding: base64"};
    e.body = base64_lines(a.data);
    top.push_back(std::move(e));
  }
  Entity message = multipart("mixed", std::move(top));

  std::string id = parts.message_id.empty() ? new_message_id() : parts.message_id;
  message.headers = {
      "Date: " + rfc5322_date(),
      "From: " + sanitize_header_value(parts.from.empty() ? "gpualert" : parts.from, 254),
      "To: " + address_header(parts.to),
      "Subject: " + rfc2047_encode(sanitize_header_value(parts.subject, 300)),
      "Message-ID: <" + sanitize_header_value(id, 200) + ">",
      "X-Mailer: gpualert",
  };
  for (const auto& h : parts.extra_headers) {
    message.headers.push_back(sanitize_header_value(h, 900));
  }
  message.headers.push_back("MIME-Version: 1.0");

  std::string out;
  Writer().write(message, out);
  return out;
}

}  // namespace notify
