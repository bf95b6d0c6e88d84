// cli/stats.hpp: the endings of many run directories, counted (`gpualert stats`).
//
// collect_stats reads every <logdir>/<run>/report.json (never output.log: a shared log
// dir holds thousands of runs and their logs are large) and counts labels overall, per
// node (the report's `host`) and per GPU, the hardware endings per node and the causes
// (label and rule) with their latest run. A report that can't be read or parsed is
// counted as such, never fatal. cmd_stats.cpp prints the result.
#pragma once

#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "report/run_report.hpp"

namespace cli {

// Endings that point at the node's hardware rather than at the job.
inline constexpr const char* k_hardware_labels[] = {"gpu_lost", "gpu_ecc", "node_failure"};
// A node is a drain candidate from this many hardware endings.
inline constexpr int k_drain_threshold = 2;
inline constexpr size_t k_top_causes = 10;
inline constexpr size_t k_malformed_listed = 5;

// Runs per label at one place (all runs, a node, a GPU).
struct Tally {
  int runs = 0;
  int failed = 0;  // not success (and with a verdict)
  std::map<std::string, int> labels;
  void add(const std::string& label) {
    ++runs;
    ++labels[label];
    failed += label != "success" ? 1 : 0;
  }
};

// The newest run of a kind: its time, as written and as seconds, and its directory.
struct Latest {
  std::time_t t = -1;
  std::string when, run_dir;
  void see(std::time_t t2, const std::string& when2, const std::string& dir) {
    if (run_dir.empty() || t2 > t) {
      t = t2;
      when = when2;
      run_dir = dir;
    }
  }
};

struct Cause {
  int count = 0;
  Latest example;
};

struct Hardware {
  int count = 0;
  std::map<std::string, int> labels;
  std::set<std::string> gpus;
  Latest last;
};

struct Stats {
  std::vector<std::string> log_dirs;  // absolute, as read
  std::optional<std::time_t> since;
  int runs = 0;            // reports counted
  int no_report = 0;       // run dirs (output.log) without report.json
  int outside_window = 0;  // --since excluded
  int undated = 0;         // --since given, the report says no time we can read
  int no_verdict = 0;      // counted, but no label (a provisional report, say)
  int no_gpu = 0;          // counted, no GPU named by the report
  std::vector<std::pair<std::string, std::string>> malformed;  // first few: path, why
  int malformed_count = 0;
  std::vector<std::string> unreadable_dirs;  // log dirs that could not be listed
  std::map<std::string, int> states;
  Tally all;
  std::map<std::string, Tally> nodes;
  std::map<std::pair<std::string, std::string>, Tally> gpus;    // host, gpu
  std::map<std::pair<std::string, std::string>, Cause> causes;  // label, rule
  std::map<std::string, Hardware> hardware;                     // host
};

// Counts the run directories of each log dir (absolute paths; a repeated one is read
// once). Runs whose ended (else started) time is before `since` are counted apart.
// A log dir that can't be listed is named in unreadable_dirs.
Stats collect_stats(const std::vector<std::string>& log_dirs, std::optional<std::time_t> since);

// The GPUs a run's ending is counted on: the one its verdict names (a PCI address from
// an Xid record, "pci 0000:3b:00"; else a CUDA device index, mapped through the job's
// device list), else every GPU the job had: SLURM_JOB_GPUS (the node's device numbers;
// CUDA_VISIBLE_DEVICES is renumbered from 0 under Slurm's device confinement), else
// CUDA_VISIBLE_DEVICES. An index is "gpu N", a UUID is kept as written.
std::vector<std::string> gpus_of(const report::RunReport& r);

// Nodes with k_drain_threshold or more hardware endings, most first (then latest first).
std::vector<std::pair<std::string, const Hardware*>> drain_candidates(const Stats& s);
// The k_top_causes most frequent causes (success left out), most first.
std::vector<std::pair<std::pair<std::string, std::string>, const Cause*>> top_causes(
    const Stats& s);

}  // namespace cli
