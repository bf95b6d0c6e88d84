// report/run_dir.hpp: the run directory, created and made durable before the child exists.
//
// `run` calls create_run_dir() first; only after it returned (header written,
// output.log and the directories fsynced) is the child spawned. If the asked-for
// log directory can't be used, a private fallback under the state or tmp dir is
// used instead, and RunDir::fallback_reason says why (for stderr and the report).
#pragma once

#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"
#include "util/result.hpp"

namespace report {

// Lines of output.log that the wrapper wrote (header, footer) start with this,
// so that people and the classifier can tell them from the job's own output.
inline constexpr std::string_view k_marker = "#gpualert# ";
inline constexpr std::string_view k_output_begins = "#gpualert# ---- job output begins ----";
inline constexpr std::string_view k_output_ends = "#gpualert# ---- job output ends ----";

struct HeaderFacts {
  std::string name;
  std::vector<std::string> argv;
  std::string cwd, host, user, started;
  std::map<std::string, std::string> env;  // GPU/scheduler-relevant variables
  // Who keeps the run: the wrapper's pid and the host's boot id, so that a later
  // `gpualert sweep` can tell a run whose wrapper is gone (killed with the job, the
  // node rebooted) from one still going.
  long pid = 0;
  std::string boot_id;
};

// What a run's output.log says of itself: its header and, if the wrapper got that
// far, its footer. Read by `gpualert sweep` for runs whose wrapper is gone.
struct LogFacts {
  HeaderFacts header;
  std::string command;                       // the header's command line, shell-quoted
  bool header_complete = false;              // the "job output begins" line was written
  std::optional<std::string> ended, status;  // footer lines: "ended: ...", "status: ..."
  uint64_t size = 0;
};
util::Result<LogFacts> read_log_facts(const std::string& log_path);

// The host's boot id (/proc/sys/kernel/random/boot_id), or "".
std::string current_boot_id();

struct RunDir {
  std::string path;      // absolute
  std::string log_path;  // path/output.log
  // Open for writing, positioned after the header, and holding an exclusive flock:
  // while it is open the run is in progress (see `gpualert sweep`).
  util::UniqueFd log_fd;
  uint64_t header_bytes = 0;
  uint64_t header_lines = 0;  // '\n' in the header
  std::optional<std::string> fallback_reason;
};

struct RunDirRequest {
  std::string log_dir;                      // where the user asked for it
  std::vector<std::string> fallback_bases;  // tried in order when log_dir fails
  std::string name, host;
  std::time_t start = 0;
};

// Creates <base>/<name>-<YYYYmmdd-HHMMSS>-<host>-<pid>/output.log with the header,
// fsyncs the file, the run directory and its parent. Fails only when every base failed.
util::Result<RunDir> create_run_dir(const RunDirRequest& request, const HeaderFacts& header);

std::string format_header(const HeaderFacts& header);

// The variables worth recording at start: GPU selection, scheduler job facts, launcher ranks.
std::map<std::string, std::string> relevant_environment(char** envp);

}  // namespace report
