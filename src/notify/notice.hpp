// notify/notice.hpp: everything that goes out about one finished run, built from its run directory.
//
// notify_run() and `gpualert notify` call build_notice(); it reads report.json,
// output.log (evidence context and tail), kernel.log and the attachments, and
// renders the mail (mime.hpp) and the webhook payload. Reading is bounded (see
// log_excerpt.hpp, attachments.hpp), so building takes well under a second for
// ordinary logs and a few seconds at worst for multi-gigabyte ones.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "notify/notify.hpp"
#include "report/run_report.hpp"
#include "util/result.hpp"

namespace notify {

struct Notice {
  report::RunReport report;
  std::string subject;
  std::string message;                  // complete RFC 5322 message
  std::string webhook_payload;          // per config.webhook_format
  std::string ntfy_payload;             // an NtfyMessage as JSON (payloads.hpp)
  std::vector<std::string> unattached;  // "name: reason" for the wrapper's end line
};

util::Result<Notice> build_notice(const RunNotice& notice, const config::Config& config);

// The sender when none is configured: gpualert@<domain>, the domain being
// sender_domain("/etc/mailname", host), else gpualert@<host> (which many relays refuse:
// has_mail_domain says so, for test-notify). Looked up once per process.
std::string default_from();

// The mail domain of this host: /etc/mailname's first line (Debian's convention), else
// the host name when it has a dot, else its canonical name from the resolver
// (getaddrinfo AI_CANONNAME, as `hostname -f`); "" when none has a dot.
std::string sender_domain(const std::string& mailname_file, const std::string& host);

// Whether the address's domain has a dot ("a@example.org", not "a@vm").
bool has_mail_domain(const std::string& address);

}  // namespace notify
