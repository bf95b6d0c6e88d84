#include "notify/notice.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include "notify/attachments.hpp"
#include "notify/content.hpp"
#include "notify/gpu_chart.hpp"
#include "notify/log_excerpt.hpp"
#include "notify/mime.hpp"
#include "notify/payloads.hpp"
#include "notify/text_filters.hpp"
#include "notify/transport.hpp"
#include "util/fd.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

// A mail domain: a host name with at least one dot (relays refuse a bare "vm").
bool is_domain(std::string_view name) {
  return name.find('.') != std::string_view::npos && name.front() != '.' && name.back() != '.' &&
         name.size() <= 253 &&
         name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") ==
             std::string_view::npos &&
         name.find_first_not_of("0123456789.") != std::string_view::npos;  // not an IPv4 address
}

}  // namespace

std::string sender_domain(const std::string& mailname_file, const std::string& host) {
  if (auto text = util::read_file(mailname_file)) {
    std::string first = text->substr(0, text->find('\n'));
    std::string name(util::trim_blanks(first));
    if (is_domain(name)) {
      return name;
    }
  }
  if (is_domain(host)) {
    return host;
  }
  // The resolver's canonical name (/etc/hosts, then DNS): what `hostname -f` says.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = AI_CANONNAME;
  addrinfo* found = nullptr;
  std::string canonical;
  if (!host.empty() && ::getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0 && found) {
    if (found->ai_canonname) {
      canonical = found->ai_canonname;
    }
    ::freeaddrinfo(found);
  }
  return is_domain(canonical) ? canonical : std::string();
}

std::string default_from() {
  static const std::string from = [] {
    std::string host = util::hostname();
    std::string domain = sender_domain("/etc/mailname", host);
    return "gpualert@" + (domain.empty() ? util::safe_file_component(host, 64) : domain);
  }();
  return from;
}

bool has_mail_domain(const std::string& address) {
  std::string bare = bare_address(address);
  auto at = bare.rfind('@');
  return at != std::string::npos && is_domain(std::string_view(bare).substr(at + 1));
}

util::Result<Notice> build_notice(const RunNotice& rn, const config::Config& config) {
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
  static const std::vector<model::EvidenceLine> k_none;
  LogExcerpt ex = read_excerpt(log_path, kernel_path, r.verdict ? r.verdict->evidence : k_none);
  std::string cwd = r.cwd.empty() ? rn.run_dir : r.cwd;
  std::string host = r.host.empty() ? util::hostname() : r.host;
  // The stall notice goes out while the job runs: the log is attached to the final one.
  const bool stalled = r.state == "stalled";
  auto attachments = stalled ? std::vector<Attachment>()
                             : gather_attachments(log_path, cwd, rn.attach, rn.budget_bytes,
                                                  log_path + " on " + host);
  for (const auto& a : attachments) {
    if (!a.attached) {
      n.unattached.push_back(a.name + ": " + a.note);
    }
  }
  n.subject = build_subject(r);
  // The GPUs over the run, when gpualert-gpu kept a timeline (docs/gpu.md).
  std::string chart;
  std::vector<std::string> gpus_now;
  if (auto timeline = util::read_file(rn.run_dir + "/gpus.jsonl"); timeline) {
    chart = gpu_chart_png(*timeline);
    if (stalled) {
      gpus_now = gpu_now_lines(*timeline);  // is the stalled job still computing?
    }
  }
  Bodies bodies = build_bodies(r, ex, attachments, rn.budget_bytes, !chart.empty(), gpus_now);

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
  if (stalled) {
    parts.extra_headers.push_back("X-Gpualert-State: stalled");
  }
  auto msg = render_message(parts);
  if (!msg) {
    return util::Error{msg.error()};
  }
  n.message = std::move(*msg);

  if (config.webhook_format == "json") {
    auto raw = util::read_file(report_path);
    n.webhook_payload = json_payload(r, raw ? *raw : std::string(), n.subject);
  } else {
    n.webhook_payload = slack_payload(r, n.subject);
  }
  n.ntfy_payload = ntfy_to_json(ntfy_message(r));
  return n;
}

}  // namespace notify
