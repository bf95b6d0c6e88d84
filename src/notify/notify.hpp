// notify/notify.hpp: tell the person how a run ended, without ever touching its exit status.
//
// CONTRACT (implemented in notify/*.cpp):
// - notify_run() is called by `run` after report.json is written. It builds the
//   message from the run directory (report.json + output.log + attachments),
//   writes it to the outbox first (atomically), then delivers it in a separate
//   process with a hard deadline; what was not delivered stays in the outbox
//   with its reason. It never throws, never exits, and returns within the
//   deadline (plus a small margin) whatever the server does.
// - The returned Outcome says what happened, for the wrapper's one end line.
// - With no SMTP and no webhook configured (the embedded default) the message
//   stays in the outbox: queued = true, detail says where and how to configure.
// - Call it when the caller has no other threads running (it forks).
// - The outbox format and how the MIME bytes are produced: outbox.hpp, mime.hpp.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "notify/policy.hpp"
#include "report/run_report.hpp"

namespace notify {

struct Outcome {
  bool delivered = false;        // every configured channel accepted it
  bool queued = false;           // (some of) it is in the outbox
  std::string where;             // "smtp://...", "webhook", or the outbox path
  std::string detail;            // reason of a failure, or how to configure delivery
  std::vector<std::string> ids;  // the outbox entries made
};

struct RunNotice {
  std::string run_dir;                // directory holding report.json and output.log
  std::vector<std::string> attach;    // --attach globs, relative to the job's cwd
  uint64_t budget_bytes = 10u << 20;  // --budget
  // Only queue the notice, held back for this long (no delivery now): what `run`
  // keeps while Slurm is ending its job, in case Slurm's SIGKILL ends `run` too.
  int64_t hold_seconds = 0;
  std::vector<std::string> supersede;  // held entries to withdraw before queueing this one
  // Where report.json is when not in run_dir: `run` keeps it in the state dir when
  // the log's device could not take it (a full disk), and the notice matters most then.
  std::string report_path;
};

Outcome notify_run(const RunNotice& notice, const config::Config& config);

}  // namespace notify
