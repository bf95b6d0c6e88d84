// notify/policy.hpp: the notification decisions `run` makes itself, without libcurl.
//
// `run` keeps its own start-up cheap by not loading libcurl and its dozens of
// dependencies: building and sending messages happen in the gpualert-notify
// helper binary (see cli/notifier.hpp). What run decides itself is here.
#pragma once

#include <string>

#include "config/config.hpp"
#include "report/run_report.hpp"

namespace notify {

// A run that ended well: the verdict says success (or, without a verdict, exit 0).
bool is_success(const report::RunReport& r);

// The person stopped the job from their own terminal: an interactive run labelled
// `cancelled` that died of SIGINT, exited 130, or quotes a KeyboardInterrupt.
bool interrupted_at_terminal(const report::RunReport& r);

// Whether Config::notify_when (always | failure | never) asks for a message about this run.
// `failure` leaves out a run interrupted at its terminal: the person knows already.
bool should_notify(const config::Config& config, const report::RunReport& run);

// Whether the outbox holds messages waiting for delivery, or notices waiting to be
// built (notify/pending.hpp): a readdir each, no parsing.
bool outbox_has_pending(const config::Config& config);

}  // namespace notify
