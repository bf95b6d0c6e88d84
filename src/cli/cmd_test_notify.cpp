// cli/cmd_test_notify.cpp: `gpualert test-notify`: send a test message now and say exactly what
// failed.
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/notify_flags.hpp"
#include "cli/options.hpp"
#include "config/config.hpp"
#include "notify/deliver.hpp"
#include "notify/mime.hpp"
#include "notify/notice.hpp"
#include "notify/transport.hpp"
#include "util/text.hpp"

namespace cli {

int cmd_test_notify(int argc, char** argv) {
  Options options("gpualert test-notify",
                  "Send a test notification through every configured channel.");
  NotifyFlags flags;
  flags.add_to(options, "the most each attempt may take (default 60s)", /*with_recipients=*/true);
  if (auto done = options.parse(argc, argv, "test-notify")) {
    return *done;
  }
  auto config = flags.load();
  if (!config) {
    return 2;
  }
  if (!config::has_channel(*config)) {
    std::fprintf(stderr,
                 "gpualert: error: nothing to test: no SMTP, webhook or ntfy configured "
                 "(GPUALERT_SMTP_URL and GPUALERT_TO, GPUALERT_WEBHOOK_URL, or "
                 "GPUALERT_NTFY_URL; or %s)\n",
                 config->source.empty() ? "a config file" : config->source.c_str());
    return 1;
  }
  notify::ensure_curl_initialised();
  std::string host = util::hostname();
  std::string subject = "[gpualert] test message from " + host;
  int failures = 0;
  if (!config->smtp_url.empty()) {
    notify::MailParts parts;
    parts.from = config->from.empty() ? notify::default_from() : config->from;
    if (!notify::has_mail_domain(parts.from)) {
      std::fprintf(stderr,
                   "gpualert: warning: the sender %s has no domain (%s): many mail relays refuse "
                   "it; set GPUALERT_FROM (or `from` in the config file) to an address of your "
                   "domain, e.g. GPUALERT_FROM=gpualert@example.org\n",
                   notify::bare_address(parts.from).c_str(),
                   config->from.empty()
                       ? "no /etc/mailname, and the host's name has no domain in the resolver"
                       : "as configured");
    }
    parts.to = config->to;
    parts.subject = subject;
    parts.text = "This is a test message from gpualert on " + host +
                 ".\nIf you read this, failed and finished training runs will reach you too.\n";
    parts.html = "<p>This is a test message from gpualert on <b>" + host + "</b>.</p>";
    auto message = notify::render_message(parts);
    auto start = std::chrono::steady_clock::now();
    notify::SendResult r;
    if (!message) {
      r.stage = "message";
      r.detail = message.error();
    } else {
      r = notify::smtp_send(*config, config->to, *message, config->notify_timeout);
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    if (r.ok) {
      std::string rcpts;
      for (const auto& t : config->to) {
        rcpts += (rcpts.empty() ? "" : ", ") + t;
      }
      std::printf("smtp: test message sent to %s via %s in %lld ms\n", rcpts.c_str(),
                  notify::redact_url(config->smtp_url).c_str(), static_cast<long long>(ms));
    } else {
      ++failures;
      std::fprintf(stderr, "gpualert: error: smtp %s: %s\n",
                   notify::redact_url(config->smtp_url).c_str(), r.describe().c_str());
    }
  }
  if (!config->webhook_url.empty()) {
    nlohmann::json payload = config->webhook_format == "json" ? nlohmann::json{{"test", true},
                                                                               {"host", host},
                                                                               {"subject", subject},
                                                                               {"text", subject}}
                                                              : nlohmann::json{{"text", subject}};
    auto r = notify::webhook_post(*config, payload.dump(), config->notify_timeout);
    if (r.ok) {
      std::printf("webhook: test message accepted (HTTP %ld)\n", r.response);
    } else {
      ++failures;
      std::fprintf(stderr, "gpualert: error: webhook: %s\n", r.describe().c_str());
    }
  }
  if (!config->ntfy_url.empty()) {
    notify::NtfyMessage m;
    m.title = subject;
    m.priority = "default";
    m.tags = "test_tube";
    m.message = "This is a test message from gpualert on " + host +
                ". If you read this, failed and finished training runs will reach you too.";
    auto r = notify::ntfy_post(*config, m, config->notify_timeout);
    if (r.ok) {
      std::printf("ntfy: test message accepted by %s (HTTP %ld)\n",
                  notify::redact_url(config->ntfy_url).c_str(), r.response);
    } else {
      ++failures;
      std::fprintf(stderr, "gpualert: error: ntfy: %s\n", r.describe().c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace cli
