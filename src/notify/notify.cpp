#include "notify/notify.hpp"

#include <ctime>
#include <exception>

#include "notify/content.hpp"
#include "notify/deliver.hpp"
#include "notify/notice.hpp"
#include "notify/outbox.hpp"
#include "notify/transport.hpp"

namespace notify {

namespace {

Outcome notify_run_or_throw(const RunNotice& rn, const Config& config) {
  Outcome out;
  auto notice = build_notice(rn, config);
  if (!notice) {
    out.detail = "cannot build the notification: " + notice.error();
    return out;
  }
  Outbox outbox(outbox_dir(config), sent_dir(config));
  for (const auto& id : rn.supersede) {
    outbox.withdraw(id);  // gone already, or being sent: then it was due, and stands
  }
  std::vector<std::string> ids;
  std::string first_queued;
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
      out.detail += (out.detail.empty() ? "" : "; ") + added.error();
      return;
    }
    ids.push_back(added->id);
    if (first_queued.empty()) {
      first_queued = outbox.payload_path(*added);
    }
  };
  if (!config.smtp_url.empty() || !has_channel(config)) {
    EntryMeta m;
    m.channel = "smtp";
    m.to = config.to;
    queue(std::move(m), notice->message);
  }
  if (!config.webhook_url.empty()) {
    EntryMeta m;
    m.channel = "webhook";
    m.format = config.webhook_format;
    queue(std::move(m), notice->webhook_payload);
  }
  if (ids.empty()) {
    return out;  // not even the outbox could be written: detail says why
  }
  out.ids = ids;
  if (rn.hold_seconds > 0) {
    out.queued = true;
    out.where = first_queued;
    out.detail = "held in the outbox for " + std::to_string(rn.hold_seconds) + " s";
    return out;
  }
  if (!has_channel(config)) {
    out.queued = true;
    out.where = first_queued;
    out.detail = "no SMTP or webhook configured: the message is in " + first_queued +
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
      where.push_back(channel == "webhook" ? "webhook" : redact_url(config.smtp_url));
    } else {
      all_ok = false;
      out.detail += (out.detail.empty() ? "" : "; ") + channel + ": " + r.reason;
    }
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

Outcome notify_run(const RunNotice& rn, const Config& config) {
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
