#include "notify/notify.hpp"

#include <ctime>
#include <exception>

#include "notify/content.hpp"
#include "notify/deliver.hpp"
#include "notify/notice.hpp"
#include "notify/outbox.hpp"
#include "notify/payloads.hpp"
#include "notify/transport.hpp"

namespace notify {

namespace {

// How the end line names a channel that took the notice.
std::string channel_name(const std::string& channel, const config::Config& config) {
  if (channel == "ntfy") {
    return "ntfy " + redact_url(config.ntfy_url);
  }
  return channel == "webhook" ? "webhook" : redact_url(config.smtp_url);
}

Outcome notify_run_or_throw(const RunNotice& rn, const config::Config& config) {
  Outcome out;
  auto notice = build_notice(rn, config);
  if (!notice) {
    out.detail = "cannot build the notification: " + notice.error();
    return out;
  }
  Outbox outbox(config::outbox_dir(config), config::sent_dir(config));
  for (const auto& id : rn.supersede) {
    outbox.withdraw(id);  // gone already, or being sent: then it was due, and stands
  }
  std::vector<std::string> ids;
  std::string first_queued;
  // Messages the outbox could not take (state dir read-only, a file, over quota):
  // sent directly below rather than lost, and the outcome says so.
  struct Unqueued {
    EntryMeta meta;
    std::string_view payload;
    std::string why;
  };
  std::vector<Unqueued> unqueued;
  // Each channel's message goes to the outbox first; a failure is noted and the
  // other channel still gets its chance.
  auto queue = [&](EntryMeta m, std::string_view payload) {
    m.subject = notice->subject;
    m.run_dir = rn.run_dir;
    if (rn.hold_seconds > 0) {
      m.not_before = static_cast<int64_t>(std::time(nullptr)) + rn.hold_seconds;
    }
    auto added = outbox.add(m, payload);
    if (!added) {
      unqueued.push_back({m, payload, added.error()});
      return;
    }
    ids.push_back(added->id);
    if (first_queued.empty()) {
      first_queued = outbox.payload_path(*added);
    }
  };
  if (!config.smtp_url.empty() || !config::has_channel(config)) {
    EntryMeta m;
    m.channel = "smtp";
    m.to = config.to;
    queue(std::move(m), notice->message);
  }
  if (!config.webhook_url.empty()) {
    EntryMeta m;
    m.channel = "webhook";
    m.format = config.webhook_format;
    m.url = config.webhook_url;  // a later flush may run with another environment
    queue(std::move(m), notice->webhook_payload);
  }
  if (!config.ntfy_url.empty()) {
    EntryMeta m;
    m.channel = "ntfy";
    m.url = config.ntfy_url;
    queue(std::move(m), notice->ntfy_payload);
  }
  if (!unqueued.empty() && (rn.hold_seconds > 0 || !config::has_channel(config))) {
    for (const auto& u : unqueued) {  // nothing to send it through now: say why it is lost
      out.detail += (out.detail.empty() ? "" : "; ") + u.why;
    }
    unqueued.clear();
  }
  std::vector<std::string> direct_ok, direct_failed;
  for (const auto& u : unqueued) {
    ensure_curl_initialised();
    SendResult sent;
    if (u.meta.channel == "webhook") {
      sent = webhook_post(config, u.payload, config.notify_timeout);
    } else if (u.meta.channel == "ntfy") {
      if (auto m = parse_ntfy(u.payload)) {
        sent = ntfy_post(config, *m, config.notify_timeout);
      } else {
        sent.stage = "outbox";
        sent.detail = m.error();
      }
    } else {
      sent = smtp_send(config, u.meta.to, u.payload, config.notify_timeout);
    }
    std::string where = channel_name(u.meta.channel, config);
    std::string note = "the outbox could not be written (" + u.why + ")";
    if (sent.ok) {
      direct_ok.push_back(where + " (sent directly: " + note + ")");
    } else {
      direct_failed.push_back(u.meta.channel + ": " + sent.describe() + "; not kept: " + note);
    }
  }
  if (ids.empty()) {
    for (const auto& w : direct_ok) {
      out.where += (out.where.empty() ? "" : ", ") + w;
    }
    for (const auto& f : direct_failed) {
      out.detail += (out.detail.empty() ? "" : "; ") + f;
    }
    out.delivered = !direct_ok.empty() && direct_failed.empty();
    return out;  // nothing in the outbox: detail says why
  }
  out.ids = ids;
  if (rn.hold_seconds > 0) {
    out.queued = true;
    out.where = first_queued;
    out.detail = "held in the outbox for " + std::to_string(rn.hold_seconds) + " s";
    return out;
  }
  if (!config::has_channel(config)) {
    out.queued = true;
    out.where = first_queued;
    out.detail = "no SMTP, webhook or ntfy configured: the message is in " + first_queued +
                 "; set GPUALERT_SMTP_URL and GPUALERT_TO (or smtp_url/to in the config file), "
                 "then run `gpualert outbox flush`";
    return out;
  }
  auto results = deliver_isolated(config, outbox, ids, config.notify_timeout);
  bool all_ok = true;
  std::vector<std::string> where;
  for (const auto& r : results) {
    std::string channel = r.channel.empty() ? "delivery" : r.channel;
    if (r.ok) {
      where.push_back(channel_name(channel, config));
    } else {
      all_ok = false;
      out.detail += (out.detail.empty() ? "" : "; ") + channel + ": " + r.reason;
    }
  }
  for (const auto& f : direct_failed) {
    all_ok = false;
    out.detail += (out.detail.empty() ? "" : "; ") + f;
  }
  where.insert(where.end(), direct_ok.begin(), direct_ok.end());
  if (!all_ok && !where.empty()) {  // say what went out, not only what failed
    std::string sent;
    for (const auto& w : where) {
      sent += (sent.empty() ? "" : ", ") + w;
    }
    out.detail = "notified " + sent + "; not: " + out.detail;
  }
  out.delivered = all_ok;
  out.queued = !all_ok;
  for (const auto& w : where) {
    out.where += (out.where.empty() ? "" : ", ") + w;
  }
  if (!all_ok) {
    out.where += (out.where.empty() ? "" : "; ") + std::string("left in ") + outbox.dir();
  }
  return out;
}

}  // namespace

Outcome notify_run(const RunNotice& rn, const config::Config& config) {
  try {
    return notify_run_or_throw(rn, config);
  } catch (const std::exception& e) {
    Outcome out;
    out.detail = std::string("notification failed: ") + e.what();
    return out;
  } catch (...) {
    Outcome out;
    out.detail = "notification failed: unknown error";
    return out;
  }
}

}  // namespace notify
