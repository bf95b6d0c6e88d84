#include "notify/payloads.hpp"

#include <nlohmann/json.hpp>

#include "notify/content.hpp"
#include "notify/policy.hpp"
#include "notify/text_filters.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

using nlohmann::json;

constexpr const char* k_colour_failure = "#cf222e";  // the mail's banner colours
constexpr const char* k_colour_success = "#1a7f37";

// Job-controlled text on one line: cleaned, masked, cut to max bytes.
std::string line_of(std::string_view text, size_t max) {
  return sanitize_header_value(mask_secrets(clean_log_line(text)), max);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool has_action(const report::RunReport& r) {
  return r.verdict && !r.verdict->action.empty() && r.verdict->action != "none";
}

// "job 4242 llama-ft rank 1 on gpu-node17": which run this is, for a title.
std::string who(const report::RunReport& r) {
  std::string s;
  if (std::string id = scheduler_job_id(r.env); !id.empty()) {
    s += "job " + id + " ";
  }
  s += r.name.empty() ? "job" : r.name;
  for (const char* k : {"RANK", "SLURM_PROCID"}) {
    if (auto it = r.env.find(k); it != r.env.end() && !it->second.empty() && it->second != "0") {
      s += " rank " + it->second;
      break;
    }
  }
  return s + " on " + (r.host.empty() ? "unknown host" : r.host);
}

// "FAILED cuda_oom" / "succeeded".
std::string outcome(const report::RunReport& r) {
  if (r.state == "stalled" && r.stall) {  // the --stall notice of a job still running
    return "STALLED (no output for " + util::human_duration(r.stall->after_s) + ")";
  }
  if (is_success(r)) {
    return "succeeded";
  }
  return r.verdict && !r.verdict->label.empty() ? "FAILED " + r.verdict->label : "FAILED";
}

// Everything but the subject: the cause, the first action, where the log is.
std::string details(const report::RunReport& r) {
  std::string t;
  if (!is_success(r)) {
    if (std::string cause = decisive_line(r); !cause.empty()) {
      t += "Cause: " + cause + "\n";
    }
  }
  if (has_action(r)) {
    t += "First action: " + line_of(r.verdict->action, 300) + "\n";
  }
  t += "Ended: " + ending_phrase(r) + "\n";
  t += "Log: " + line_of(r.log_path, 500) + " on " + line_of(r.host, 100);
  return t;
}

json mrkdwn(const std::string& text) { return json{{"type", "mrkdwn"}, {"text", text}}; }

}  // namespace

std::string slack_escape(std::string_view text) { return markup_escape(text, false); }

std::string summary_text(const report::RunReport& r, const std::string& subject) {
  return util::valid_utf8(sanitize_header_value(subject, 300) + "\n" + details(r));
}

std::string slack_payload(const report::RunReport& r, const std::string& subject) {
  bool ok = is_success(r);
  json blocks = json::array();
  // A header is plain text of at most 150 characters.
  blocks.push_back({{"type", "header"},
                    {"text",
                     {{"type", "plain_text"},
                      {"text", line_of(outcome(r) + ": " + (r.name.empty() ? "job" : r.name), 150)},
                      {"emoji", false}}}});
  std::string ev;
  if (r.verdict && !ok) {
    for (size_t i = 0; i < r.verdict->evidence.size() && i < 3; ++i) {
      const auto& e = r.verdict->evidence[i];
      ev += (e.line ? std::to_string(e.line) + ": " : "") + line_of(e.text, 300) + "\n";
    }
  }
  if (!ev.empty()) {
    blocks.push_back(
        {{"type", "section"}, {"text", mrkdwn("*Cause*\n```" + slack_escape(ev) + "```")}});
  }
  json fields = json::array();
  auto field = [&](const std::string& key, const std::string& value) {
    if (!value.empty()) {
      fields.push_back(mrkdwn("*" + key + "*\n" + slack_escape(line_of(value, 300))));
    }
  };
  field("Verdict",
        r.verdict
            ? r.verdict->label + (r.verdict->rule.empty() ? "" : " (rule " + r.verdict->rule + ")")
            : "unclassified");
  field("Ended", ending_phrase(r));
  field("Job",
        scheduler_job_id(r.env).empty() ? r.name : r.name + " (" + scheduler_job_id(r.env) + ")");
  field("Host", r.host);
  for (const char* k : {"RANK", "SLURM_PROCID"}) {
    if (auto it = r.env.find(k); it != r.env.end() && !it->second.empty()) {
      field("Rank", it->second);
      break;
    }
  }
  field("Command", r.command.empty() ? util::shell_join(r.argv) : r.command);
  blocks.push_back({{"type", "section"}, {"fields", fields}});
  if (has_action(r)) {
    blocks.push_back(
        {{"type", "section"},
         {"text", mrkdwn("*First action:* " + slack_escape(line_of(r.verdict->action, 500)))}});
  }
  blocks.push_back(
      {{"type", "context"},
       {"elements", json::array({mrkdwn("Log: `" + slack_escape(line_of(r.log_path, 500)) +
                                        "` on " + slack_escape(line_of(r.host, 100)))})}});
  json payload = {
      {"text", slack_escape(sanitize_header_value(subject, 300))},
      {"attachments",
       json::array({{{"color", ok ? k_colour_success : k_colour_failure}, {"blocks", blocks}}})}};
  return dump(payload);
}

std::string json_payload(const report::RunReport& r, std::string_view report_json,
                         const std::string& subject) {
  // report.json's keys as written (this version may not know them all), with the ones
  // it knows serialised again: masked, even in a report that another tool wrote.
  json j = json::parse(report_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    j = json::object();
  }
  const json known = report::to_json(r);
  for (const auto& [key, value] : known.items()) {
    j[key] = value;
  }
  j["text"] = summary_text(r, subject);
  return dump(j);
}

NtfyMessage ntfy_message(const report::RunReport& r) {
  NtfyMessage m;
  bool ok = is_success(r);
  m.title = line_of(outcome(r) + ": " + who(r), 250);
  m.priority = ok ? "default" : "high";
  std::string label = r.state == "stalled"                     ? "stalled"
                      : r.verdict && !r.verdict->label.empty() ? r.verdict->label
                                                               : "unclassified";
  // Tags that are emoji names show as the emoji; the label shows as a word.
  m.tags = std::string(r.state == "stalled" ? "hourglass"
                       : ok                 ? "white_check_mark"
                                            : "rotating_light") +
           "," + sanitize_header_value(util::safe_file_component(label, 40), 40);
  m.message = util::valid_utf8(details(r));
  return m;
}

std::string ntfy_to_json(const NtfyMessage& m) {
  return dump(
      json{{"title", m.title}, {"priority", m.priority}, {"tags", m.tags}, {"message", m.message}});
}

util::Result<NtfyMessage> parse_ntfy(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("message") || !j["message"].is_string()) {
    return util::Error{"not an ntfy message (a JSON object with \"message\")"};
  }
  auto text_of = [&](const char* key, const char* fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
  };
  NtfyMessage m;
  m.title = text_of("title", "");
  m.priority = text_of("priority", "default");
  m.tags = text_of("tags", "");
  m.message = text_of("message", "");
  return m;
}

}  // namespace notify
