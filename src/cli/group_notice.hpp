// cli/group_notice.hpp: `run`'s (and `sweep`'s) side of one notice per job
// (report/job_group.hpp): join the group at the start, and at the end record the
// run's ending and learn whether this run sends the job's notice.
#pragma once

#include <optional>
#include <string>

#include "config/config.hpp"
#include "report/job_group.hpp"
#include "report/run_report.hpp"

namespace cli {

struct RunGroup {
  std::optional<report::GroupIdentity> id;  // none: a run of its own
  std::string dir;                          // beside the run directory
  long pid = 0;                             // the wrapper's
  util::Status registered = util::ok_status();
  report::GroupDecision decision;  // at the end
};

// The group of the run whose report (env, host, run_dir) is being made, by the
// configuration's `group` / `group_size` (recorded in rep.env as GPUALERT_GROUP and
// GPUALERT_GROUP_SIZE before the header is written, so that a sweep finds the same
// group) or the Slurm step. The directory is set once rep.run_dir is known.
RunGroup find_group(const config::Config& config, report::RunReport& rep, long pid);

// Sets the group's directory (beside rep.run_dir) and writes the start record there.
void join_group(RunGroup& group, const report::RunReport& rep);

// Records the run's ending (rep.verdict decided) and puts the group's decision in
// rep.job_group. False: another member's notice covers this run (or will), so it sends
// none. A run of its own: true. A Slurm array member in `array = digest` mode (recorded
// in rep.env as GPUALERT_ARRAY) whose notice it would be records it in the array's
// directory instead, and the last member to end gets rep.array_digest and sends it.
bool group_ending(RunGroup& group, report::RunReport& rep);

// After the notifier was run (or the policy asked for no message) by the member that
// sends the group's notice: marks it sent, so that no other member takes it over.
void group_notice_done(RunGroup& group, const report::RunReport& rep);

// Whether this run keeps a held notice while Slurm ends its job (report::first_to_hold):
// one per group, and one per array in digest mode; a run of its own always.
bool may_hold_notice(const RunGroup& group, const report::RunReport& rep);

// notify::should_notify, but a digest with a failing member is a failure's notice.
bool notice_wanted(const config::Config& config, const report::RunReport& rep);

}  // namespace cli
