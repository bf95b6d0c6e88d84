#include "notify/transport.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "notify/notice.hpp"
#include "notify/text_filters.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

struct Upload {
  std::string_view rest;
};

size_t read_upload(char* buf, size_t size, size_t n, void* userp) {
  auto* up = static_cast<Upload*>(userp);
  size_t len = std::min(size * n, up->rest.size());
  std::memcpy(buf, up->rest.data(), len);
  up->rest.remove_prefix(len);
  return len;
}

size_t collect(char* buf, size_t size, size_t n, void* userp) {
  auto* s = static_cast<std::string*>(userp);
  if (s->size() < 4096) {
    s->append(buf, std::min<size_t>(size * n, 4096 - s->size()));
  }
  return size * n;
}

struct ReplyLog {
  std::string last_reply;
  bool refused = false;
  uint64_t size_limit = 0;
};

// Keeps the server's last reply line (libcurl's error text has the code, not the
// words) and the message size limit its EHLO announced ("250-SIZE 5242880").
int trace(CURL*, curl_infotype type, char* data, size_t size, void* userp) {
  if (type == CURLINFO_HEADER_IN) {
    std::string line(data, size);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
      line.pop_back();
    }
    auto* log = static_cast<ReplyLog*>(userp);
    if (line.size() > 9 && line.compare(0, 3, "250") == 0 && line.compare(4, 5, "SIZE ") == 0) {
      log->size_limit = std::strtoull(line.c_str() + 9, nullptr, 10);
    }
    // The refusal, not the "221 Bye" to the QUIT that follows it.
    bool refusal = !line.empty() && (line[0] == '4' || line[0] == '5');
    if (refusal || !log->refused) {
      log->last_reply = clean_log_line(line);
      log->refused = log->refused || refusal;
    }
  }
  return 0;
}

std::string stage_of(CURLcode rc, long response) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return "DNS";
    case CURLE_COULDNT_CONNECT:
      return "connect";
    case CURLE_OPERATION_TIMEDOUT:
      return "timeout";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
      return "TLS";
    case CURLE_LOGIN_DENIED:
    case CURLE_AUTH_ERROR:
      return "AUTH";
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return "config";
    default:
      return response >= 400 ? "server" : "protocol";
  }
}

bool plausible_smtp_url(const std::string& url) {
  return url.rfind("smtp://", 0) == 0 || url.rfind("smtps://", 0) == 0;
}

// One transfer: the handle, its error buffer and the server's last reply line,
// set up the same way for SMTP and webhooks (no signals, the deadline, a connect
// timeout within it, the trace callback, the URL and an optional CA file).
struct Request {
  std::unique_ptr<CURL, CurlDeleter> handle;
  char err[CURL_ERROR_SIZE] = "";
  ReplyLog replies;

  CURL* get() const { return handle.get(); }
  SendResult finish(CURLcode rc) const;
};

// Null when libcurl can't make a handle. The Request is heap-held: libcurl keeps
// pointers to its error buffer and reply string.
std::unique_ptr<Request> open_request(const std::string& url, const std::string& ca_file,
                                      std::chrono::milliseconds timeout) {
  auto req = std::make_unique<Request>();
  req->handle.reset(curl_easy_init());
  CURL* c = req->get();
  if (!c) {
    return nullptr;
  }
  long total = std::max<long>(1, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min<long>(total, 15000));
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, req->err);
  curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, trace);
  curl_easy_setopt(c, CURLOPT_DEBUGDATA, &req->replies);
  curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);  // needed for the trace callback; it prints nothing
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  if (!ca_file.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, ca_file.c_str());
  }
  return req;
}

SendResult Request::finish(CURLcode rc) const {
  SendResult r;
  r.curl_code = rc;
  curl_easy_getinfo(get(), CURLINFO_RESPONSE_CODE, &r.response);
  r.size_limit = replies.size_limit;
  if (rc == CURLE_OK) {
    r.ok = true;
    return r;
  }
  r.stage = stage_of(rc, r.response);
  r.detail = err[0] ? std::string(err) : std::string(curl_easy_strerror(rc));
  if (r.response >= 400 && !replies.last_reply.empty()) {
    r.detail += "; server said: " + replies.last_reply;
  }
  r.detail += " (curl " + std::to_string(rc) + ")";
  return r;
}

}  // namespace

std::string redact_url(const std::string& url) {
  auto scheme = url.find("://");
  auto at = url.find('@');
  auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (scheme != std::string::npos && at != std::string::npos &&
      (slash == std::string::npos || at < slash)) {
    return url.substr(0, scheme + 3) + url.substr(at + 1);
  }
  return url;
}

std::string bare_address(const std::string& addr) {
  auto lt = addr.rfind('<');
  auto gt = addr.rfind('>');
  if (lt != std::string::npos && gt != std::string::npos && gt > lt) {
    return addr.substr(lt + 1, gt - lt - 1);
  }
  return addr;
}

SendResult smtp_send(const config::Config& config, const std::vector<std::string>& to,
                     std::string_view message, std::chrono::milliseconds timeout) {
  SendResult bad;
  bad.stage = "config";
  if (config.smtp_url.empty()) {
    bad.detail = "no SMTP server configured (GPUALERT_SMTP_URL or smtp_url in the config file)";
    return bad;
  }
  if (!plausible_smtp_url(config.smtp_url)) {
    bad.detail = "SMTP URL must start with smtp:// or smtps://: " + redact_url(config.smtp_url);
    return bad;
  }
  if (to.empty()) {
    bad.detail = "no recipient (GPUALERT_TO, --to, or `to` in the config file)";
    return bad;
  }
  auto password = config::smtp_password(config);
  if (!password) {
    bad.detail = password.error();
    return bad;
  }
  auto req = open_request(config.smtp_url, config.smtp_ca_file, timeout);
  if (!req) {
    bad.detail = "curl_easy_init failed";
    return bad;
  }
  CURL* c = req->get();
  bool has_login = !config.smtp_user.empty();
  // STARTTLS whenever offered; insisted on when we would otherwise send a password in clear.
  curl_easy_setopt(c, CURLOPT_USE_SSL, has_login ? CURLUSESSL_ALL : CURLUSESSL_TRY);
  if (has_login) {
    curl_easy_setopt(c, CURLOPT_USERNAME, config.smtp_user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, password->c_str());
  }
  // Built by appending: GCC 12 gives a false -Wrestrict on "<" + std::string.
  std::string from = "<";
  from += bare_address(config.from.empty() ? default_from() : config.from);
  from += ">";
  curl_easy_setopt(c, CURLOPT_MAIL_FROM, from.c_str());
  std::unique_ptr<curl_slist, SlistDeleter> rcpt;
  for (const auto& addr : to) {
    std::string a = "<";
    a += sanitize_header_value(bare_address(addr), 254);
    a += ">";
    rcpt.reset(curl_slist_append(rcpt.release(), a.c_str()));
  }
  curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt.get());
  // One refused recipient must not cost the others their mail (nor keep the
  // message retried for everyone): send when at least one was accepted.
  // (libcurl 7.69's spelling; 8.2 renamed it and kept this one as an alias.)
  if (to.size() > 1) {
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT_ALLLOWFAILS, 1L);
  }
  Upload up{message};
  curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(c, CURLOPT_READFUNCTION, read_upload);
  curl_easy_setopt(c, CURLOPT_READDATA, &up);
  curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(message.size()));
  return req->finish(curl_easy_perform(c));
}

namespace {

// One HTTP(S) POST of `body` with `headers`; any 2xx is success, another status is
// an "HTTP" failure that quotes the start of the answer.
SendResult http_post(const std::string& url, const std::string& ca_file,
                     const std::vector<std::string>& headers, std::string_view body,
                     std::chrono::milliseconds timeout) {
  SendResult bad;
  bad.stage = "config";
  auto req = open_request(url, ca_file, timeout);
  if (!req) {
    bad.detail = "curl_easy_init failed";
    return bad;
  }
  CURL* c = req->get();
  std::string answer;
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  std::unique_ptr<curl_slist, SlistDeleter> hdrs;
  for (const auto& h : headers) {
    hdrs.reset(curl_slist_append(hdrs.release(), h.c_str()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  SendResult r = req->finish(curl_easy_perform(c));
  if (r.ok && (r.response < 200 || r.response >= 300)) {
    r.ok = false;
    r.stage = "HTTP";
    r.detail = redact_url(url) + " answered " + std::to_string(r.response) + ": " +
               sanitize_header_value(answer, 200);
  }
  return r;
}

// A header value from job text: one line, and RFC 2047 words (unfolded: HTTP has no
// folding) when it is not ASCII, which ntfy decodes.
std::string http_header_value(std::string_view text) {
  std::string encoded = rfc2047_encode(sanitize_header_value(text, 250));
  std::string out;
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '\r' || encoded[i] == '\n') {
      continue;
    }
    out += encoded[i];
  }
  return out;
}

}  // namespace

SendResult webhook_post(const config::Config& config, std::string_view json,
                        std::chrono::milliseconds timeout) {
  if (config.webhook_url.empty()) {
    SendResult bad;
    bad.stage = "config";
    bad.detail = "no webhook configured (GPUALERT_WEBHOOK_URL)";
    return bad;
  }
  return http_post(config.webhook_url, config.smtp_ca_file, {"Content-Type: application/json"},
                   json, timeout);
}

SendResult ntfy_post(const config::Config& config, const NtfyMessage& m,
                     std::chrono::milliseconds timeout) {
  if (config.ntfy_url.empty()) {
    SendResult bad;
    bad.stage = "config";
    bad.detail = "no ntfy topic configured (GPUALERT_NTFY_URL)";
    return bad;
  }
  std::vector<std::string> headers = {"Content-Type: text/plain; charset=utf-8"};
  if (!m.title.empty()) {
    headers.push_back("Title: " + http_header_value(m.title));
  }
  if (!m.priority.empty()) {
    headers.push_back("Priority: " + http_header_value(m.priority));
  }
  if (!m.tags.empty()) {
    headers.push_back("Tags: " + http_header_value(m.tags));
  }
  return http_post(config.ntfy_url, config.smtp_ca_file, headers, m.message, timeout);
}

}  // namespace notify
