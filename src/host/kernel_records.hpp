// host/kernel_records.hpp: which kernel messages are about the job.
//
// EvidenceWatch (evidence.hpp) reads /dev/kmsg and hands each record that bears on a
// verdict to a KernelRecordFilter, which keeps the job's and counts the others.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "host/job_scope.hpp"

namespace host {

// Sorts kernel messages into the job's and others', as they arrive. An OOM report
// spans several records (the allocation that invoked the killer, the cgroup's usage,
// the `oom-kill:` summary, `Killed process`): they are held until the report is
// complete and kept or dropped together.
//
// Whose a record is:
// - OOM report: where the job's memory cgroup is known, the killed task's cgroup
//   (task_memcg) is the job's or below it (a pid may since have been reused by
//   another job); otherwise the killed pid is one of the job's processes.
// - GPU record (NVRM/Xid, nvidia, amdgpu, i915): one that names a process is the
//   job's only if that process is; one that names none is the job's if it names one
//   of the job's GPUs, and is dropped if it names another. Where that can't be told
//   (the job's GPUs are not known, or the record names no GPU) it is kept, marked as
//   not attributed.
// - segfault / general protection lines: by the pid they name.
class KernelRecordFilter {
 public:
  KernelRecordFilter(JobScope scope, std::shared_ptr<ProcessTree> tree);
  // One record: `text` is the message, `line` how it is kept ("[  sec.usec] text").
  void add(std::string_view text, const std::string& line);
  // The end of the run: an OOM report still open is decided on what it has.
  void finish();
  const std::vector<std::string>& kept() const { return m_kept; }
  // Records about other processes or GPUs, left out.
  uint64_t dropped() const { return m_dropped; }

 private:
  struct Report {
    std::vector<std::string> lines;
    std::optional<std::string> task_memcg;
    std::vector<pid_t> pids;
  };
  void close_report();
  bool pid_is_job(pid_t pid);
  void keep(std::string line);

  JobScope m_scope;
  std::shared_ptr<ProcessTree> m_tree;
  std::optional<Report> m_report;
  std::set<pid_t> m_job_kills, m_other_kills;  // decided OOM victims, for oom_reaper lines
  bool m_gpus_asked = false;
  std::optional<std::set<std::string>> m_gpus;
  std::vector<std::string> m_kept;
  uint64_t m_dropped = 0;
};

// Parses "prio,seq,usec,flags;text" into "[  sec.usec] text"; empty if malformed.
std::string format_kmsg_record(const std::string& record);
bool kernel_line_relevant(std::string_view text);

}  // namespace host
