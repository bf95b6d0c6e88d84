// cli/cmd_outbox.cpp: `gpualert outbox list | flush`: what is waiting, and sending it.
#include <fcntl.h>
#include <sys/file.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/notify_flags.hpp"
#include "cli/options.hpp"
#include "config/config.hpp"
#include "notify/deliver.hpp"
#include "notify/notify.hpp"
#include "notify/outbox.hpp"
#include "notify/pending.hpp"
#include "notify/text_filters.hpp"
#include "util/fd.hpp"
#include "util/text.hpp"

namespace cli {

namespace {

// A notice that its run keeps back while Slurm ends the job (see notify::is_held).
std::string held_until(const notify::EntryMeta& m) {
  return "held until " + util::iso8601_local(static_cast<std::time_t>(m.not_before));
}

// One line per entry, under a header: id, channel, recipients, attempts, subject, last
// failure or hold (tab-separated).
void print_entry(const notify::EntryMeta& m) {
  std::string to;
  for (const auto& t : m.to) {
    to += (to.empty() ? "" : ",") + t;
  }
  std::string note = notify::is_held(m)     ? held_until(m)
                     : m.last_error.empty() ? "-"
                                            : notify::sanitize_header_value(m.last_error, 400);
  std::printf("%s\t%s\t%s\t%d attempt%s\t%s\t%s\n", m.id.c_str(), m.channel.c_str(),
              to.empty() ? "-" : to.c_str(), m.attempts, m.attempts == 1 ? "" : "s",
              notify::sanitize_header_value(m.subject, 200).c_str(), note.c_str());
}

// A notice `run` could not build (no helper then): the same columns, "pending" as
// its channel and why in the last one.
void print_pending(const notify::PendingNotice& p) {
  std::string to;
  for (const auto& t : p.to) {
    to += (to.empty() ? "" : ",") + t;
  }
  std::printf("%s\tpending\t%s\t0 attempts\t%s\tnot built yet: %s\n", p.id.c_str(),
              to.empty() ? "-" : to.c_str(), notify::sanitize_header_value(p.run_dir, 200).c_str(),
              notify::sanitize_header_value(p.reason, 400).c_str());
}

// Builds each pending notice into the outbox and sends it, as `run` would have.
// Returns how many are still pending or were not delivered; counts all in `total`.
int build_pending(const config::Config& config, size_t& total) {
  int kept = 0;
  for (const auto& p : notify::list_pending(config)) {
    if (!notify::take_pending(config, p)) {
      continue;  // another flush has it
    }
    ++total;
    notify::RunNotice rn;
    rn.run_dir = p.run_dir;
    rn.report_path = p.report_path;
    rn.attach = p.attach;
    if (p.budget_bytes > 0) {
      rn.budget_bytes = p.budget_bytes;
    }
    config::Config c = config;
    if (!p.to.empty()) {
      c.to = p.to;
    }
    notify::Outcome out = notify::notify_run(rn, c);
    bool built = out.delivered || !out.ids.empty();
    notify::finish_pending(config, p, built);
    if (out.delivered) {
      std::printf("sent\t%s\t%s\n", p.id.c_str(), out.where.c_str());
    } else {
      ++kept;
      std::printf("kept\t%s\t%s\n", p.id.c_str(), out.detail.c_str());
    }
  }
  return kept;
}

}  // namespace

int cmd_outbox(int argc, char** argv) {
  Options options("gpualert outbox", "List, send or withdraw the notifications not yet delivered.");
  std::string action;
  std::vector<std::string> ids;
  NotifyFlags flags;
  options.positional("ACTION", action, "list | flush | withdraw ID...")
      .required()
      .choices({"list", "flush", "withdraw"});
  options.positionals("ID", ids,
                      "withdraw: the entries to remove unsent (ids as `list` shows them)");
  flags.add_to(options, "the most a flush may take (default 60s)", /*with_recipients=*/false);
  bool if_idle = false;  // for `run`'s background flush: none when another flush runs
  options.flag("--if-idle", if_idle, "").hidden();
  if (auto done = options.parse(argc, argv, "outbox")) {
    return *done;
  }
  auto config = flags.load();
  if (!config) {
    return 2;
  }
  notify::Outbox outbox(config::outbox_dir(*config), config::sent_dir(*config));
  if (action == "withdraw") {
    // Gone already, or being sent right now (then it was due, and stands): not an error.
    for (const auto& id : ids) {
      std::printf("%s\t%s\n", outbox.withdraw(id) ? "withdrawn" : "not there", id.c_str());
    }
    return 0;
  }
  // One flush at a time: several runs ending together must not each start one
  // against the same (perhaps silent) server. `run`'s background flush leaves it
  // to the one running; a flush asked for by a person waits its turn.
  util::UniqueFd flush_lock;
  if (action == "flush") {
    if (util::make_dirs(outbox.dir(), 0700)) {
      flush_lock.reset(::open((outbox.dir() + "/flush.lock").c_str(),
                              O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    }
    if (flush_lock.valid() &&
        ::flock(flush_lock.get(), if_idle ? LOCK_EX | LOCK_NB : LOCK_EX) != 0) {
      return 0;  // --if-idle and another flush is running: it sends what is here
    }
  }
  outbox.tidy();
  auto entries = outbox.list();
  if (!entries) {
    std::fprintf(stderr, "gpualert: error: outbox: %s\n", entries.error().c_str());
    return 1;
  }
  if (action == "list") {
    if (!entries->empty()) {  // an empty outbox prints nothing, for scripts
      std::printf("id\tchannel\tto\tattempts\tsubject\tlast error or hold\n");
    }
    for (const auto& m : *entries) {
      print_entry(m);
    }
    for (const auto& p : notify::list_pending(*config)) {
      print_pending(p);
    }
    for (const auto& d : outbox.dead()) {
      std::fprintf(stderr, "gpualert: WARNING: given up: %s %s (%s); it is in %s/dead\n",
                   d.id.c_str(), notify::sanitize_header_value(d.subject, 200).c_str(),
                   notify::sanitize_header_value(d.last_error, 400).c_str(), outbox.dir().c_str());
    }
    return 0;
  }
  size_t total = 0;
  int pending_kept = build_pending(*config, total);
  for (const auto& m : *entries) {
    if (notify::is_held(m)) {
      std::printf("held\t%s\t%s\n", m.id.c_str(), held_until(m).c_str());
    } else {
      ids.push_back(m.id);
    }
  }
  auto results = notify::deliver_isolated(*config, outbox, ids, config->notify_timeout);
  int kept = pending_kept;
  for (const auto& r : results) {
    if (r.ok) {
      std::printf("sent\t%s\n", r.id.c_str());
    } else {
      ++kept;
      std::printf("kept\t%s\t%s\n", r.id.c_str(), r.reason.c_str());
    }
  }
  if (kept > 0) {
    total += results.size();
    std::fprintf(stderr, "gpualert: %d of %zu notification%s still in %s\n", kept, total,
                 total == 1 ? "" : "s", outbox.dir().c_str());
    return 1;
  }
  return 0;
}

}  // namespace cli
