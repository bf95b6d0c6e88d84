// host/evidence.hpp: what the host saw about the job while it ran (kernel messages,
// cgroup OOM kills).
//
// `run` reads the cgroup counter before the child starts and opens /dev/kmsg right
// after the spawn; the supervise loop polls the kernel log's fd and calls
// on_readable(), so records are read as they arrive (on a long job the kernel's
// ring buffer overwrites early ones). Only records about this job are kept
// (spec/taxonomy.md, host evidence): the kernel log is shared by every job on the
// node, and another job's OOM kill or Xid must neither decide this job's label nor
// be quoted in its report. Each source degrades on its own: where /dev/kmsg is not
// readable (not root, dmesg_restrict) or no memory cgroup is found, sources() says
// so and the report tells the reader what was and wasn't looked at.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "util/fd.hpp"

namespace host {

// The job's processes: its first process, that one's descendants, and whatever runs
// in the process group it leads. Pids seen once stay the job's for the run, so that
// a record about a process that has already exited is still told apart.
class ProcessTree {
 public:
  explicit ProcessTree(pid_t root, std::string proc = "/proc");
  // Whether pid (a process or one of its threads) is or was one of the job's. A pid
  // not seen yet costs one scan of /proc.
  bool contains(pid_t pid);
  // Scans /proc for the job's processes now (before a process the kernel is about
  // to kill can be reaped).
  void refresh();
  pid_t root() const { return m_root; }

 private:
  bool seen(pid_t pid) const { return m_seen.count(pid) > 0; }
  pid_t m_root;
  std::string m_proc;
  std::unordered_set<pid_t> m_seen;
};

// Which GPUs and memory cgroup are the job's.
struct JobScope {
  // The job's memory cgroup as the kernel names it in OOM reports. None where it
  // can't be told from others' (not found, or the root, which holds everything).
  std::optional<std::string> memcg;
  // The PCI bus ids ("0000:3b:00", lower case) of the job's GPUs, none where unknown
  // (no GPU list in the environment, or no driver to map it with). Asked once, when
  // the first GPU record arrives: most runs see none, and it reads the driver's files.
  std::function<std::optional<std::set<std::string>>()> gpus;
};

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

class EvidenceWatch {
 public:
  // Reads the cgroup OOM counter (before the job can use memory). Never fails.
  static EvidenceWatch start();
  // Opens /dev/kmsg at its end: kernel records from now on are the run's. Called right
  // after the spawn of `job` (its first process; -1 if none was started), while the
  // job is still starting (the open costs ~25 us, which would otherwise stand between
  // the header's sync and the job). Never fails.
  void open_kernel_log(pid_t job);
  // The kernel log's fd to poll for reading while the job runs; -1 when not open.
  int kernel_log_fd() const { return m_kmsg.get(); }
  // Reads every record that has arrived. Never blocks.
  void on_readable();
  // Reads the records left and the counter again.
  void finish();

  // Kernel lines about this job that bear on a verdict (OOM killer, GPU driver), as text.
  const std::vector<std::string>& kernel_lines() const;
  std::optional<int64_t> cgroup_oom_kills() const;
  // The kernel log could be read for the run (empty or not).
  bool kernel_log_read() const { return m_kernel_log_read; }
  const std::map<std::string, std::string>& sources() const { return m_sources; }

 private:
  util::UniqueFd m_kmsg;
  bool m_kernel_log_read = false;
  uint64_t m_overruns = 0;
  std::string m_oom_counter_path;
  std::optional<std::string> m_memcg;
  std::optional<int64_t> m_oom_before, m_oom_after;
  std::unique_ptr<KernelRecordFilter> m_filter;
  std::string m_record;  // read buffer
  std::map<std::string, std::string> m_sources;
};

// Parses "prio,seq,usec,flags;text" into "[  sec.usec] text"; empty if malformed.
std::string format_kmsg_record(const std::string& record);
bool kernel_line_relevant(std::string_view text);
// Path of the file holding our memory cgroup's oom_kill counter, from /proc/self/cgroup content.
std::optional<std::string> oom_counter_path(const std::string& proc_self_cgroup,
                                            const std::string& cgroup_root = "/sys/fs/cgroup");
// Our memory cgroup's path as the kernel prints it (the v1 memory controller's, else
// the v2 one), from /proc/self/cgroup content; none for the root or when absent.
std::optional<std::string> memory_cgroup_path(const std::string& proc_self_cgroup);
// The oom_kill count of a cgroup v1 memory.oom_control or v2 memory.events text.
std::optional<int64_t> parse_oom_kill(std::string_view counters);
std::optional<int64_t> read_oom_kill(const std::string& counter_file);

// The PCI bus ids of the job's GPUs, from its environment (`get` returns a variable or
// none) and the NVIDIA driver's /proc/driver/nvidia/gpus/*/information. None where
// they can't be told (see the rule in evidence.cpp).
std::optional<std::set<std::string>> job_gpu_bus_ids(
    const std::function<std::optional<std::string>(const std::string&)>& get,
    const std::string& driver_dir = "/proc/driver/nvidia/gpus");

}  // namespace host
