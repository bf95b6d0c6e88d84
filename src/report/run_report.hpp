// report/run_report.hpp: the facts of one finished run, and report.json's one reader
// (load/from_json) and one writer (save/to_text).
//
// `run` and `sweep` fill and save it; notify, stats, sweep and `classify RUN_DIR`
// read it back through load(), so the JSON form is the contract (keys listed in
// docs/spec/cli.md, more may be added).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/verdict.hpp"
#include "util/fd.hpp"
#include "util/result.hpp"

namespace report {

// --stall: the job printed nothing for `after_s` (report.json "stall").
struct StallFacts {
  double after_s = 0;                  // the --stall duration
  std::string action = "notify";       // --stall-action: notify | kill
  double at_s = 0;                     // seconds after the start when it was declared
  bool killed = false;                 // --stall-action kill ended the job
  std::optional<double> resumed_at_s;  // output came again (seconds after the start)
  std::string notice;                  // what became of the stall notice (final report)
};

struct RunReport {
  std::string name;               // job name (--name or the command's basename)
  std::vector<std::string> argv;  // the command as given
  std::string command;            // argv quoted so it can be pasted into a shell
  std::string cwd, host, user;
  std::string started, ended;  // ISO 8601 with UTC offset
  double duration_s = 0;
  std::optional<int> exit_code;       // set when the job exited normally
  std::optional<std::string> signal;  // "SIGKILL" when the job died of a signal
  bool core_dumped = false;
  bool wrapper_timeout = false;  // our own --timeout ended the job
  bool interactive = false;      // run from a terminal, the job in its foreground group (Ctrl-C)
  std::string run_dir;           // absolute path of the run directory
  std::string log_path;          // absolute path of output.log
  uint64_t log_bytes = 0;        // bytes of job output captured
  std::optional<std::string> log_fallback;     // why the run dir is not where it was asked to be
  std::map<std::string, std::string> env;      // GPU/scheduler-relevant environment at start
  std::map<std::string, std::string> sources;  // evidence source -> "read" / why not
  std::optional<int64_t> cgroup_oom_kills;     // oom_kill events in the job's memory cgroup
  bool kernel_log_read = false;                // the kernel log could be read for the run
  std::vector<std::string> scheduler_lines;    // what the scheduler said of a job it ended
  std::optional<model::Verdict> verdict;       // absent until a classifier decided
  std::vector<std::string> warnings;           // things the wrapper wants the reader to know
  // "final" (the wrapper saw the job end), "provisional" (written while Slurm was
  // ending the job, in case its SIGKILL ended the wrapper too) or "reconstructed"
  // (by `gpualert sweep`, from what a run whose wrapper was gone left behind).
  std::optional<uint64_t> cgroup_memory_peak;  // bytes, the job's memory cgroup (Slurm jobs)
  // "stalled" is the report the stall notice is built from (stall.json, beside report.json).
  std::string state = "final";
  std::optional<StallFacts> stall;
  std::optional<std::string> reconstructed;  // why the wrapper did not write it itself
  std::vector<std::string> held_notices;     // outbox entries a provisional report holds back
  // The job's GPUs as gpualert-gpu saw them (gpu/watch.hpp): one object per GPU
  // (inventory, peak and last readings, Xids, ECC deltas); absent without NVML.
  std::optional<nlohmann::json> gpus;
  std::vector<std::string> gpu_lines;  // its Xids as classifier evidence (HostEvidence)
  // One of several wrapped ranks of a job: what the group decided (report/job_group.hpp).
  std::optional<nlohmann::json> job_group;
  // The last member of a Slurm array in `array = digest` mode: every member's ending
  // (cli/group_notice.hpp), which its notice summarises.
  std::optional<nlohmann::json> array_digest;
};

// Secrets in argv, command, env values, evidence and warnings are masked
// (report/secrets.hpp); byte strings that are not UTF-8 are kept exactly under
// KEY_b64 beside a readable KEY (name, command, argv, cwd, user, run_dir, log),
// and from_json reads them back exactly.
nlohmann::json to_json(const RunReport& r);
// to_json as report.json's text (indented, newline-terminated); never throws.
std::string to_text(const RunReport& r);
util::Result<RunReport> from_json(const nlohmann::json& j);
util::Result<RunReport> load(const std::string& report_json_path);
// to_text(r) written atomically at `path`. report.json is derived from output.log
// (`gpualert classify` gives it again), so by default it is replaced, not fsynced.
util::Status save(const std::string& path, const RunReport& r,
                  util::Durability durability = util::Durability::replace_only);

// What the classifier takes from a run besides its log and kernel.log: how the job
// ended (an error for a signal name this system doesn't know) and the host's facts.
util::Result<model::ExitInfo> exit_info(const RunReport& r);
model::HostEvidence host_evidence(const RunReport& r);

}  // namespace report
