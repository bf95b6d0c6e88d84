#include "notify/mime.hpp"

#include <curl/curl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <thread>

#include "notify/gpu_chart.hpp"
#include "notify/text_filters.hpp"
#include "util/fd.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MimeDeleter {
  void operator()(curl_mime* m) const { curl_mime_free(m); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

// The in-process SMTP peer: answers every command with success and keeps the
// DATA section. Runs on its own thread until QUIT or EOF.
void capture_peer(int fd, std::string* message) {
  auto say = [fd](const char* line) { (void)util::write_all(fd, line); };
  say("220 render ESMTP\r\n");
  std::string buf;
  bool in_data = false;
  char chunk[65536];
  for (;;) {
    size_t nl;
    while ((nl = buf.find("\r\n")) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 2);
      if (in_data) {
        if (line == ".") {
          in_data = false;
          say("250 OK\r\n");
        } else {
          message->append(line.size() > 0 && line[0] == '.' ? line.substr(1)
                                                            : line);  // undo dot-stuffing
          message->append("\r\n");
        }
      } else if (line.rfind("QUIT", 0) == 0) {
        say("221 bye\r\n");
        return;
      } else if (line.rfind("DATA", 0) == 0) {
        in_data = true;
        say("354 go ahead\r\n");
      } else {
        say("250 OK\r\n");
      }
    }
    ssize_t n = util::read_retry(fd, chunk, sizeof chunk);
    if (n <= 0) {
      return;
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
}

// A listening socket in Linux's abstract namespace: no file, no network port,
// reachable only from this host by its random name. (Handing curl one end of a
// socketpair would be simpler, but libcurl 7.88 ignores CURL_SOCKOPT_ALREADY_CONNECTED.)
struct RenderSocket {
  util::UniqueFd listener;
  std::string name;
};

util::Result<RenderSocket> listen_abstract() {
  RenderSocket rs;
  std::random_device rd;
  char name[80];
  std::snprintf(name, sizeof name, "gpualert-render-%d-%08x%08x", ::getpid(), rd(), rd());
  rs.name = name;
  rs.listener.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!rs.listener.valid()) {
    return util::errno_error("socket(AF_UNIX)");
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, rs.name.data(), rs.name.size());  // sun_path[0] == 0: abstract
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + rs.name.size());
  if (::bind(rs.listener.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return util::errno_error("bind @" + rs.name);
  }
  if (::listen(rs.listener.get(), 1) != 0) {
    return util::errno_error("listen @" + rs.name);
  }
  return rs;
}

std::string address_header(const std::vector<std::string>& addrs) {
  std::string out;
  for (const auto& a : addrs) {
    out += (out.empty() ? "" : ", ") + sanitize_header_value(a, 254);
  }
  return out.empty() ? "undisclosed-recipients:;" : out;
}

// libcurl's quoted-printable encoder breaks lines only at CRLF; a bare LF
// would come out as "=0A" and the whole body as one long soft-wrapped line.
std::string crlf(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 40);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && (i == 0 || text[i - 1] != '\r')) {
      out += '\r';
    }
    out += text[i];
  }
  return out;
}

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
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    return util::Error{"curl_easy_init failed"};
  }
  CURL* c = curl.get();
  std::unique_ptr<curl_mime, MimeDeleter> mime(curl_mime_init(c));
  const std::string text = crlf(parts.text), html = crlf(parts.html);
  curl_mime* alt = curl_mime_init(c);
  curl_mimepart* part = curl_mime_addpart(alt);
  curl_mime_data(part, text.data(), text.size());
  curl_mime_type(part, "text/plain; charset=utf-8");
  curl_mime_encoder(part, "quoted-printable");
  part = curl_mime_addpart(alt);
  if (parts.inline_png.empty()) {
    curl_mime_data(part, html.data(), html.size());
    curl_mime_type(part, "text/html; charset=utf-8");
    curl_mime_encoder(part, "quoted-printable");
  } else {
    curl_mime* related = curl_mime_init(c);
    curl_mimepart* sub = curl_mime_addpart(related);
    curl_mime_data(sub, html.data(), html.size());
    curl_mime_type(sub, "text/html; charset=utf-8");
    curl_mime_encoder(sub, "quoted-printable");
    sub = curl_mime_addpart(related);
    curl_mime_data(sub, parts.inline_png.data(), parts.inline_png.size());
    curl_mime_type(sub, "image/png");
    curl_mime_encoder(sub, "base64");
    std::string id = std::string("Content-ID: <") + k_gpu_chart_cid + ">";
    curl_slist* hdrs = curl_slist_append(nullptr, id.c_str());
    hdrs = curl_slist_append(hdrs, "Content-Disposition: inline; filename=\"gpus.png\"");
    curl_mime_headers(sub, hdrs, 1);
    curl_mime_subparts(part, related);  // the part owns it from here on
    curl_mime_type(part, "multipart/related");
  }

  part = curl_mime_addpart(mime.get());
  curl_mime_subparts(part, alt);  // the part owns alt from here on
  curl_mime_type(part, "multipart/alternative");
  std::unique_ptr<curl_slist, SlistDeleter> inline_hdr(
      curl_slist_append(nullptr, "Content-Disposition: inline"));
  curl_mime_headers(part, inline_hdr.release(), 1);

  for (const auto& a : parts.attachments) {
    if (!a.attached) {
      continue;
    }
    part = curl_mime_addpart(mime.get());
    curl_mime_data(part, a.data.data(), a.data.size());
    curl_mime_filename(part, util::safe_file_component(a.name, 100).c_str());
    curl_mime_type(part,
                   a.content_type.empty() ? "application/octet-stream" : a.content_type.c_str());
    curl_mime_encoder(part, "base64");
  }

  std::string id = parts.message_id.empty() ? new_message_id() : parts.message_id;
  std::vector<std::string> headers = {
      "Date: " + rfc5322_date(),
      "From: " + sanitize_header_value(parts.from.empty() ? "gpualert" : parts.from, 254),
      "To: " + address_header(parts.to),
      "Subject: " + rfc2047_encode(sanitize_header_value(parts.subject, 300)),
      "Message-ID: <" + sanitize_header_value(id, 200) + ">",
      "X-Mailer: gpualert",
  };
  for (const auto& h : parts.extra_headers) {
    headers.push_back(sanitize_header_value(h, 900));
  }
  std::unique_ptr<curl_slist, SlistDeleter> hdrs;
  for (const auto& h : headers) {
    hdrs.reset(curl_slist_append(hdrs.release(), h.c_str()));
  }
  std::unique_ptr<curl_slist, SlistDeleter> rcpt(curl_slist_append(nullptr, "<render@localhost>"));

  auto sock = listen_abstract();
  if (!sock) {
    return util::Error{"rendering the message: " + sock.error()};
  }
  std::string message;
  std::atomic<int> conn{-1};
  int listener = sock->listener.get();
  std::thread peer([listener, &conn, &message] {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      return;  // woken by shutdown(): curl never connected
    }
    conn = fd;
    capture_peer(fd, &message);
  });

  char err[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, "smtp://127.0.0.1/render");
  curl_easy_setopt(c, CURLOPT_ABSTRACT_UNIX_SOCKET, sock->name.c_str());
  curl_easy_setopt(c, CURLOPT_MAIL_FROM, "<render@localhost>");
  curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt.get());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs.get());
  curl_easy_setopt(c, CURLOPT_MIMEPOST, mime.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  CURLcode rc = curl_easy_perform(c);
  curl.reset();  // closes curl's end: the peer sees EOF if it has not seen QUIT
  ::shutdown(listener, SHUT_RDWR);
  if (conn >= 0) {
    ::shutdown(conn, SHUT_RDWR);
  }
  peer.join();
  if (conn >= 0) {
    ::close(conn);
  }
  if (rc != CURLE_OK) {
    return util::Error{std::string("rendering the message: ") +
                       (err[0] ? err : curl_easy_strerror(rc))};
  }
  return message;
}

}  // namespace notify
