#include "notify/notice.hpp"

#include <nlohmann/json.hpp>

#include "notify/attachments.hpp"
#include "notify/content.hpp"
#include "notify/gpu_chart.hpp"
#include "notify/log_excerpt.hpp"
#include "notify/mime.hpp"
#include "notify/text_filters.hpp"
#include "util/fd.hpp"
#include "util/text.hpp"

namespace notify {

std::string default_from() { return "gpualert@" + util::safe_file_component(util::hostname(), 64); }

std::string slack_payload(const report::RunReport& r, const std::string& subject) {
  std::string text = "*" + subject + "*\n";
  if (r.verdict) {
    if (!r.verdict->action.empty() && r.verdict->action != "none") {
      text += "First action: " + r.verdict->action + "\n";
    }
    std::string ev;
    for (size_t i = 0; i < r.verdict->evidence.size() && i < 5; ++i) {
      const auto& e = r.verdict->evidence[i];
      ev += (e.line ? std::to_string(e.line) + ": " : "") + mask_secrets(clean_log_line(e.text)) +
            "\n";
    }
    if (!ev.empty()) {
      text += "```" + ev + "```\n";
    }
  }
  text += "Command: `" + mask_secrets(clean_log_line(r.command)) + "`\n";
  text += "Log: " + clean_log_line(r.log_path) + " on " + clean_log_line(r.host);
  return nlohmann::json{{"text", valid_utf8(text)}, {"username", "gpualert"}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

util::Result<Notice> build_notice(const RunNotice& rn, const Config& config) {
  Notice n;
  std::string report_path = rn.report_path.empty() ? rn.run_dir + "/report.json" : rn.report_path;
  auto rep = report::load(report_path);
  if (!rep) {
    return util::Error{rep.error()};
  }
  n.report = std::move(*rep);
  const auto& r = n.report;
  std::string log_path = r.log_path.empty() ? rn.run_dir + "/output.log" : r.log_path;
  std::string kernel_path = rn.run_dir + "/kernel.log";
  static const std::vector<classify::EvidenceLine> k_none;
  LogExcerpt ex = read_excerpt(log_path, kernel_path, r.verdict ? r.verdict->evidence : k_none);
  std::string cwd = r.cwd.empty() ? rn.run_dir : r.cwd;
  std::string host = r.host.empty() ? util::hostname() : r.host;
  auto attachments =
      gather_attachments(log_path, cwd, rn.attach, rn.budget_bytes, log_path + " on " + host);
  for (const auto& a : attachments) {
    if (!a.attached) {
      n.unattached.push_back(a.name + ": " + a.note);
    }
  }
  n.subject = build_subject(r);
  // The GPUs over the run, when gpualert-gpu kept a timeline (docs/gpu.md).
  std::string chart;
  if (auto timeline = util::read_file(rn.run_dir + "/gpus.jsonl"); timeline) {
    chart = gpu_chart_png(*timeline);
  }
  Bodies bodies = build_bodies(r, ex, attachments, rn.budget_bytes, !chart.empty());

  MailParts parts;
  parts.from = config.from.empty() ? default_from() : config.from;
  parts.to = config.to;
  parts.subject = n.subject;
  parts.text = std::move(bodies.text);
  parts.html = std::move(bodies.html);
  parts.attachments = std::move(attachments);
  parts.inline_png = std::move(chart);
  parts.extra_headers.push_back("X-Gpualert-Run: " + r.run_dir);
  if (r.verdict) {
    parts.extra_headers.push_back("X-Gpualert-Label: " + r.verdict->label);
  }
  auto msg = render_message(parts);
  if (!msg) {
    return util::Error{msg.error()};
  }
  n.message = std::move(*msg);

  if (config.webhook_format == "json") {
    auto raw = util::read_file(report_path);
    n.webhook_payload = raw ? *raw : report::to_text(r);
  } else {
    n.webhook_payload = slack_payload(r, n.subject);
  }
  return n;
}

}  // namespace notify
