// notify/deliver.hpp: sending outbox entries, isolated from the caller.
//
// notify_run() and `outbox flush` call deliver_isolated(): the attempts run in
// a forked process that the caller kills at the deadline, so a hung server, a
// TLS stall or a crash inside libcurl costs the caller at most the deadline and
// never its exit status. Whatever was not delivered stays in the outbox with
// its reason. (`run` retries what earlier runs left behind by starting
// `gpualert-notify outbox flush` once its child started: cli/notifier.hpp.)
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "notify/outbox.hpp"

namespace notify {

struct EntryResult {
  std::string id;
  std::string channel;
  bool ok = false;
  bool skipped = false;  // another process holds it, or it is gone
  std::string reason;    // why it failed / was skipped
};

// Attempts each entry in this process, each bounded by what is left until deadline.
std::vector<EntryResult> deliver_now(const config::Config& config, const Outbox& outbox,
                                     const std::vector<std::string>& ids,
                                     std::chrono::steady_clock::time_point deadline);

// The same in a child process, killed at now + timeout. Entries the child did not
// report on get a failure reason recorded here. Returns within timeout + a few ms.
std::vector<EntryResult> deliver_isolated(const config::Config& config, const Outbox& outbox,
                                          const std::vector<std::string>& ids,
                                          std::chrono::milliseconds timeout);

// libcurl's global initialisation, once per process (not thread-safe in libcurl, so call early).
void ensure_curl_initialised();

}  // namespace notify
