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

#include "notify/config.hpp"
#include "notify/notify.hpp"
#include "report/run_report.hpp"
#include "util/result.hpp"

namespace notify {

struct Notice {
  report::RunReport report;
  std::string subject;
  std::string message;                  // complete RFC 5322 message
  std::string webhook_payload;          // per config.webhook_format
  std::vector<std::string> unattached;  // "name: reason" for the wrapper's end line
};

util::Result<Notice> build_notice(const RunNotice& notice, const Config& config);

// Slack incoming-webhook JSON ({"text": ...}, mrkdwn) for a run.
std::string slack_payload(const report::RunReport& r, const std::string& subject);

// The sender when none is configured: gpualert@<host>.
std::string default_from();

}  // namespace notify
