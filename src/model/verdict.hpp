// model/verdict.hpp: what the classifier consumes besides the log, and what it decides.
//
// These plain structs are the vocabulary shared by `run` (which gathers the exit
// status and the host evidence), the classifier, report.json (report/run_report.hpp,
// its one reader and writer) and the notifier. They sit below all of them, so that
// report/ and notify/ use them without depending on classify/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace model {

// How the job ended. Exactly one of exit_code and signal is set for a finished job.
struct ExitInfo {
  std::optional<int> exit_code;  // normal exit
  std::optional<int> signal;     // killed by this signal number
  bool wrapper_timeout = false;  // gpualert's own --timeout stopped it
  bool stalled = false;          // gpualert's --stall-action kill stopped it (no output)
};

// Facts from outside the log, gathered by `run` (or read from a case directory).
struct HostEvidence {
  // Lines of kernel messages that bear on the run (OOM killer, NVRM Xid), as text.
  std::vector<std::string> kernel_lines;
  // Increase of the job's memory-cgroup oom_kill counter during the run, if it could be read.
  std::optional<int64_t> cgroup_oom_kills;
  // The kernel log of the run could be read (whether or not it held anything).
  bool kernel_log_read = false;
  // Scheduler facts such as SLURM_JOB_ID (name -> value).
  std::map<std::string, std::string> scheduler;
  // What the scheduler said about how the job ended ("scontrol: job 12 JobState=TIMEOUT
  // Reason=TimeLimit"), scanned like kernel lines, with source "scheduler".
  std::vector<std::string> scheduler_lines;
  // Xid events NVML reported for the job's GPUs (gpualert-gpu), worded as the kernel
  // words them ("NVRM: Xid (PCI:0000:19:00): 79, ...") so that the same rules match
  // where /dev/kmsg can't be read; scanned like kernel lines, with source "gpu".
  std::vector<std::string> gpu_lines;
};

// One line that supports the verdict.
struct EvidenceLine {
  uint64_t line = 0;   // 1-based line number in its source (0 when not from a file)
  std::string text;    // the line, ANSI codes stripped, invalid UTF-8 replaced
  std::string source;  // "log", "kernel", "exit", "cgroup", "wrapper"
};

struct Verdict {
  std::string label;   // one label of spec/taxonomy.md
  std::string rule;    // id of the rule that decided, or "exit-status" / "success"
  std::string group;   // taxonomy group ("gpu software", "host", ...), "-" for success/unknown
  std::string action;  // first action for the person who reads the report
  std::vector<EvidenceLine> evidence;
  std::map<std::string, std::string> fields;  // extracted: xid, pci, gpu, rank, requested, ...
  // How sure the verdict is and why, in one phrase: "certain: ...", "likely: ...",
  // "guess: ..." (see decide.cpp).
  std::string confidence;
  // A success a person must still hear about: "NaN/Inf losses were logged (line 120)".
  std::vector<std::string> caveats;
};

}  // namespace model
