// notify/pending.hpp: notices queued before they could be built.
//
// `run` builds a notice through the gpualert-notify helper; when the helper can't
// be started (gpualert copied alone onto PATH), `run` itself records what the
// notice needs here, so that nothing is lost, and says so. `outbox flush` (in the
// helper, once it is installed) builds each one into the outbox and sends it;
// `outbox list` shows them. Written and read by both binaries: no libcurl here.
//
// FORMAT: <state_dir>/outbox/pending/ID.json, one JSON object per notice (keys
// below); a flusher takes one by renaming it to ID.json.taking.PID first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "util/result.hpp"

namespace notify {

struct PendingNotice {
  std::string id;
  std::string run_dir;
  std::string report_path;  // empty: run_dir/report.json
  std::vector<std::string> attach;
  std::vector<std::string> to;  // empty: the configuration's at flush time
  uint64_t budget_bytes = 0;
  std::string created;  // ISO 8601
  std::string reason;   // why it could not be built at once
};

std::string pending_dir(const config::Config& config);
// Writes a new pending notice (fills id and created); returns its path.
util::Result<std::string> queue_pending(const config::Config& config, PendingNotice notice);
// Oldest first; unreadable files are skipped.
std::vector<PendingNotice> list_pending(const config::Config& config);
// Takes a pending notice for building: false when another process took it first.
bool take_pending(const config::Config& config, const PendingNotice& notice);
// After building: removes it (done), or puts it back for a later flush.
void finish_pending(const config::Config& config, const PendingNotice& notice, bool done);

}  // namespace notify
