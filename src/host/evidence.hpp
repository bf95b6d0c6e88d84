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
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/kernel_records.hpp"
#include "util/fd.hpp"

namespace host {

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
  // The memory cgroup's peak usage in bytes (v1 memory.max_usage_in_bytes, v2
  // memory.peak), read now; nothing when the counter's cgroup is unknown or has none.
  std::optional<uint64_t> memory_peak_bytes() const;

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

// Path of the file holding our memory cgroup's oom_kill counter, from /proc/self/cgroup content.
std::optional<std::string> oom_counter_path(const std::string& proc_self_cgroup,
                                            const std::string& cgroup_root = "/sys/fs/cgroup");
// Our memory cgroup's path as the kernel prints it (the v1 memory controller's, else
// the v2 one), from /proc/self/cgroup content; none for the root or when absent.
std::optional<std::string> memory_cgroup_path(const std::string& proc_self_cgroup);
// The oom_kill count of a cgroup v1 memory.oom_control or v2 memory.events text.
std::optional<int64_t> parse_oom_kill(std::string_view counters);
std::optional<int64_t> read_oom_kill(const std::string& counter_file);

}  // namespace host
