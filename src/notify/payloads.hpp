// notify/payloads.hpp: what a run's notice says on the channels other than mail.
//
// build_notice() renders these once, when the notice is queued; the outbox keeps
// them as they were (a later flush sends the same bytes). Every piece of
// job-controlled text is cleaned (control characters, invalid UTF-8) and masked
// for secrets here, as in the mail.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/run_report.hpp"
#include "util/result.hpp"

namespace notify {

// A few lines of plain text for a person: the subject, the first action, the decisive
// evidence, where the log is. Bounded (~1500 bytes), so that it fits a push message.
std::string summary_text(const report::RunReport& r, const std::string& subject);

// Slack incoming-webhook JSON: Block Kit (header, the cause, a field table, the first
// action, where the log is) inside an attachment whose colour bar says the outcome; a
// top-level "text" is the notification's fallback.
std::string slack_payload(const report::RunReport& r, const std::string& subject);

// The "json" webhook format: report.json's object with a "text" field beside its keys
// (summary_text), so that relays that show "text" (Mattermost, Teams, ntfy) have a
// message. report_json: report.json's bytes as written: its keys are kept, those the
// report knows are serialised again from `r` (masked for secrets).
std::string json_payload(const report::RunReport& r, std::string_view report_json,
                         const std::string& subject);

// A push message for ntfy (https://ntfy.sh, or a self-hosted server): POSTed to the topic
// URL with the message as body and the rest as headers.
struct NtfyMessage {
  std::string title;     // one line
  std::string priority;  // "high" for a failure, "default" for a success
  std::string tags;      // comma-separated: an emoji name, then the label
  std::string message;   // summary_text
};

// Its title says outcome, label and which job ("FAILED cuda_oom: job 4242 llama-ft rank 3 on
// gpu-node17"), shorter than the subject; the message is summary_text without the subject.
NtfyMessage ntfy_message(const report::RunReport& r);
// The outbox keeps an ntfy entry as this JSON; parse_ntfy reads it back.
std::string ntfy_to_json(const NtfyMessage& m);
util::Result<NtfyMessage> parse_ntfy(std::string_view json);

// Slack mrkdwn's escaping of job text: & < > become entities, so that a job's output
// can neither mention @channel (<!channel>) nor forge links.
std::string slack_escape(std::string_view text);

}  // namespace notify
