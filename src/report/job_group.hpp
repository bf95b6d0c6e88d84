// report/job_group.hpp: one notice per job whose ranks are each wrapped.
//
// `srun -n 8 gpualert run -- python train.py` runs eight wrappers, one per task; a
// torchrun or deepspeed launch wrapped on each node runs one per node. They share no
// process, only (usually) the log directory, so they coordinate through files in it:
//
//   <log dir>/.gpualert-groups/<key>/
//     m.<member>   written at the start: the member's rank, host, pid and run directory
//     e.<member>   its ending (label, cause, run directory), renamed into place
//     notice       created with O_EXCL by the one member that sends the job's notice
//     sent         made by that member once its notifier is done (see mark_sent)
//     takeover     O_EXCL, by the one member that sends instead of a claimer that died
//     held         O_EXCL, by the one member that keeps a held notice (first_to_hold)
//
// A failing member writes its ending, then tries to create `notice`: the one that
// succeeds is the first failure and sends the notice (the other members' endings so far
// in a line each); the others are covered by it. A member that succeeded writes its
// ending, then lists the directory: when every member it knows of has ended and none
// failed, it tries to create `notice` and the one that succeeds sends the job's success
// notice (marked as its own when fewer members than the group's size wrote there). Each member
// writes before it lists, so the last one to end sees every ending; O_EXCL decides between members
// ending at the same moment; no member waits for another. A member killed before it writes its
// ending leaves the job without a success notice (it failed) and without a failure notice unless
// another member failed or `gpualert sweep` reports it (the sweep finishes it like the wrapper
// would).
//
// A member that can't use the directory, or that sees fewer members than the group's size
// when its job is over (a log directory local to each node), sends its own notice, marked
// as such: no notice is ever lost to coordination.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/fd.hpp"
#include "util/result.hpp"

namespace report {

struct GroupIdentity {
  std::string key;     // "slurm-17.0", or the --group key (as given)
  std::string member;  // the file-safe member id: its rank, else host-pid
  std::string rank;    // "" when the launcher told none
  std::string host;
  std::string noun = "rank";  // "task" for a Slurm step's tasks
  std::optional<int> size;    // how many members the group has, when known
  bool reusable = false;      // a key of the user's, which may come again (not Slurm's)
};

// The group a run belongs to: an explicit key (--group, `group` in the config,
// GPUALERT_GROUP) with its size (explicit, else WORLD_SIZE-like variables), else a Slurm
// step of several tasks (SLURM_STEP_NUM_TASKS > 1: key from SLURM_JOB_ID and
// SLURM_STEP_ID, rank SLURM_PROCID). None for a run of its own.
std::optional<GroupIdentity> group_identity(const std::map<std::string, std::string>& env,
                                            const std::string& explicit_key,
                                            std::optional<int> explicit_size,
                                            const std::string& host, long pid);

// <log_dir>/.gpualert-groups/<key made file-safe>.
std::string group_dir(const std::string& log_dir, const std::string& key);

struct MemberRecord {
  std::string member, rank, host, run_dir;
  long pid = 0;
  bool ended = false;
  bool failed = false;
  std::string label;   // the verdict's label
  std::string cause;   // the decisive line, cut
  std::string ending;  // "exit 1 after 2s"
};

// Makes the group directory and writes the member's start record. A key used again once
// every member of its last group has ended (or its wrapper is gone) starts a new group:
// the old directory is renamed to <dir>.ended-<time>-<pid>. An error says why the
// directory can't be used; the run then notifies on its own (finish_member says so).
util::Status register_member(const std::string& dir, const GroupIdentity& id,
                             const std::string& run_dir, long pid);

struct GroupDecision {
  bool send = false;                // this member sends a notice
  std::string role;                 // first_failure, all_succeeded, covered, not_last, own
  std::string covered_by;           // covered: the member whose notice it is
  std::string own_why;              // own: why this member could not coordinate ("" otherwise)
  std::vector<std::string> others;  // one line per other member (and each one not seen)
  // The sender's claim, open and flock'ed until its notice is sent (mark_sent) or the
  // process ends: a claim nobody holds and nobody marked sent was abandoned.
  std::shared_ptr<util::UniqueFd> claim_lock;
};

// Records this member's ending and decides whether it sends the group's notice (above).
// `registered` is register_member's result at the start.
GroupDecision finish_member(const std::string& dir, const GroupIdentity& id,
                            const MemberRecord& ending, const util::Status& registered);

// A run's wrapper holds a lock on its output.log until it exits (report/run_dir.hpp):
// free (or no log) means the wrapper is gone.
bool wrapper_gone(const std::string& run_dir);

// The run directory in a member's start record, if the group directory has one.
std::optional<std::string> member_run_dir(const std::string& dir, const std::string& member);

// The member that sends the group's notice holds a lock on the claim until it marks it
// sent (`sent`) once the notifier is done (delivered or in the outbox). A claim without
// that mark that nobody holds (its claimer was killed between its claim and its notice)
// is taken over by one other member (`takeover`, O_EXCL), which sends its own notice
// instead: no notice lost to the claim. mark_sent releases the lock.
void mark_sent(const std::string& dir, GroupDecision& d);
// The run directory of the member whose claim was abandoned so, if any.
std::optional<std::string> abandoned_claim_run_dir(const std::string& dir);
bool take_over(const std::string& dir);

// While Slurm ends a job whose ranks outlive its SIGTERM, each wrapper would keep a notice
// held back in the outbox in case Slurm's SIGKILL ends it too (cli/run_job.cpp): only the
// first member to ask keeps one for the group (`held`, O_EXCL). True for that one, and
// when the directory can't be used (the member then keeps its own).
bool first_to_hold(const std::string& dir);

// report.json's "job_group": key, noun, rank, member, size, dir, role, send, own_why,
// covered_by, others.
nlohmann::json decision_json(const GroupIdentity& id, const std::string& dir,
                             const GroupDecision& d);

// A Slurm array's members in `array = digest` mode share one such directory too
// (<log dir>/.gpualert-groups/array-<ARRAY_JOB_ID>): each member's notice becomes its
// ending there (member = the array index), and the member that finds all `size` endings
// in place (the last to end) claims and sends one digest. Returns every member's ending
// when this member sends it, else nothing; an error when the directory can't be used
// (the member then sends its own notice).
struct ArrayDigest {
  bool send = false;
  std::vector<MemberRecord> members;  // by index, when send
};
util::Result<ArrayDigest> finish_array_member(const std::string& dir, int size,
                                              const MemberRecord& ending);

}  // namespace report
