// notify/transport.hpp: one delivery attempt over SMTP or a webhook, with libcurl.
//
// Driven by delivery (deliver.hpp) inside its deadline-bounded process and by
// `test-notify`. Each call blocks at most `timeout` (curl CONNECTTIMEOUT and
// TIMEOUT) and never throws; the result names the stage that failed (DNS,
// connect, TLS, AUTH, a server's 4xx/5xx reply and its text, timeout) so that
// the person can fix the right thing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "notify/payloads.hpp"

namespace notify {

struct SendResult {
  bool ok = false;
  std::string stage;   // "DNS", "connect", "TLS", "AUTH", "server", "timeout", "config", "HTTP"
  std::string detail;  // one line: what failed and why, with the server's reply when there was one
  long response = 0;   // last SMTP/HTTP response code
  int curl_code = 0;
  uint64_t size_limit = 0;  // SMTP: the SIZE the server announced in EHLO (0: none)
  // The server refused the message for its size (552, 5.3.4, or over its SIZE).
  bool size_refused(size_t message_size) const {
    return !ok && (response == 552 || detail.find("5.3.4") != std::string::npos ||
                   (size_limit > 0 && message_size > size_limit));
  }

  std::string describe() const { return ok ? "ok" : stage + ": " + detail; }
};

// Uploads an RFC 5322 message unchanged to config.smtp_url for `to`.
// smtp:// uses STARTTLS when the server offers it (required when a password is
// configured: a password never travels in clear); smtps:// is TLS from the start.
SendResult smtp_send(const config::Config& config, const std::vector<std::string>& to,
                     std::string_view message, std::chrono::milliseconds timeout);

// POSTs a JSON payload to config.webhook_url; any 2xx is success.
SendResult webhook_post(const config::Config& config, std::string_view json,
                        std::chrono::milliseconds timeout);

// POSTs a push message to config.ntfy_url (the topic's URL): the message as the body,
// title, priority and tags as headers; any 2xx is success. User info in the URL is
// sent as HTTP basic authentication.
SendResult ntfy_post(const config::Config& config, const NtfyMessage& message,
                     std::chrono::milliseconds timeout);

// The URL without user info, for messages.
std::string redact_url(const std::string& url);

// The bare address inside "Name <a@b>" (or the text itself).
std::string bare_address(const std::string& addr);

}  // namespace notify
