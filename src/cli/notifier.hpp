// cli/notifier.hpp: how `run` hands notification to the gpualert-notify helper.
//
// The helper is a second executable beside gpualert (same directory) that links
// libcurl; `run` never loads libcurl itself, which keeps its start-up cost per job
// small, and the helper's process boundary is also the isolation the exit-status
// promise needs: whatever the notifier does (crash, hang), `run` waits at most the
// --notify-timeout in all and goes on. The commands that need libcurl
// (outbox, test-notify, notify) are run by exec'ing the helper with the same arguments.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace cli {

struct NotifyOutcome {
  bool delivered = false;
  bool queued = false;
  std::string where;             // the channel, or the outbox file
  std::string detail;            // why not delivered, or how to configure delivery
  std::vector<std::string> ids;  // the outbox entries the helper made
};

// Withdraws held notices (see notify_via_helper) that the run no longer needs.
void withdraw_held_notice(const std::vector<std::string>& ids, const std::string& config_file,
                          const config::Config& config);

// Path of gpualert-notify: beside our own executable, or "" if it is missing.
std::string notify_helper_path();

// Builds and sends (or queues) the notice of a finished run directory through the helper.
// hold_seconds > 0: only queue it, held back that long; supersede: held entries to
// withdraw first (see notify::RunNotice).
NotifyOutcome notify_via_helper(const std::string& run_dir, const std::vector<std::string>& attach,
                                uint64_t budget_bytes, const std::string& config_file,
                                const config::Config& config, int64_t hold_seconds = 0,
                                const std::vector<std::string>& supersede = {},
                                const std::string& report_path = "");

// Starts `gpualert-notify outbox flush` detached (own session, stdio on /dev/null) when
// a channel is configured and the outbox has entries; returns at once, never waits.
void flush_outbox_in_background(const config::Config& config, const std::string& config_file);

// Runs `gpualert-notify outbox flush` and waits for it (at most the notify timeout and
// a few seconds more): what `sweep` does after reporting runs.
void flush_outbox_now(const config::Config& config, const std::string& config_file);

// Starts `gpualert sweep --journal` detached when the journal holds a run whose
// wrapper seems gone, so that a later job reports it without anyone's help.
void sweep_journal_in_background(const config::Config& config, const std::string& own_entry,
                                 const std::string& config_file);

// Replaces this process with the helper running the same subcommand (argv[0] is its name).
int exec_notify_helper(int argc, char** argv);

}  // namespace cli
