// cli/run_job.hpp: the `run` command's orchestration, after its options were parsed.
//
// Order matters and is the product's promise: run directory and header on disk
// (synced) -> signals blocked -> kernel/cgroup watch opened -> child spawned ->
// output copied while the classifier follows the log on its own thread -> child
// reaped -> footer, final sync -> report.json -> notification (isolated, with
// a deadline) -> exit exactly as the child did.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace cli {

struct RunOptions {
  std::vector<std::string> command;
  std::string name;
  std::string log_dir;
  std::vector<std::string> to;
  std::vector<std::string> attach;
  std::optional<uint64_t> budget;
  std::string notify_when;  // empty: from config
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds kill_after{30000};
  std::optional<std::chrono::milliseconds> stall;  // unset: from config (off by default)
  std::string stall_action;                        // notify | kill; empty: from config
  std::optional<std::chrono::milliseconds> notify_timeout;
  std::string rules_file;
  std::string config_file;
  bool quiet = false;
  bool line_buffer = true;  // ask the job's runtimes for line-buffered stdout
  std::string group;        // --group KEY: one notice for the runs sharing it ("" = config)
  std::optional<int> group_size;
  std::string array_mode;  // --array each|digest ("" = config)
};

// Runs the job and returns how gpualert must end: a wait status to mirror.
// Usage/config errors are returned as exit code 2 before anything runs.
struct RunEnding {
  std::optional<int> exit_code;
  std::optional<int> signal;
};
RunEnding run_job(const RunOptions& options);

}  // namespace cli
