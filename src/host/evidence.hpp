// host/evidence.hpp: what the host saw while the job ran (kernel messages, cgroup OOM kills).
//
// `run` opens both sources before the child starts and reads them after it
// ended. Each source degrades on its own: where /dev/kmsg is not readable (not
// root, dmesg_restrict) or no memory cgroup is found, sources() says so and the
// report tells the reader what was and wasn't looked at.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"

namespace host {

class EvidenceWatch {
 public:
  // Reads the cgroup OOM counter (before the job can use memory). Never fails.
  static EvidenceWatch start();
  // Opens /dev/kmsg at its end: kernel records from now on are the run's. Called right
  // after the spawn, while the job is still starting (the open costs ~25 us, which
  // would otherwise stand between the header's sync and the job). Never fails.
  void open_kernel_log();
  // Reads kernel records since open_kernel_log() and the counter again.
  void finish();

  // Kernel lines that bear on a job: OOM killer and NVIDIA Xid/NVRM lines, as text.
  const std::vector<std::string>& kernel_lines() const { return m_kernel_lines; }
  std::optional<int64_t> cgroup_oom_kills() const;
  // The kernel log could be read for the run (empty or not).
  bool kernel_log_read() const { return m_kernel_log_read; }
  const std::map<std::string, std::string>& sources() const { return m_sources; }

 private:
  util::UniqueFd m_kmsg;
  bool m_kernel_log_read = false;
  std::string m_oom_counter_path;
  std::optional<int64_t> m_oom_before, m_oom_after;
  std::vector<std::string> m_kernel_lines;
  std::map<std::string, std::string> m_sources;
};

// Parses "prio,seq,usec,flags;text" into "[  sec.usec] text"; empty if malformed.
std::string format_kmsg_record(const std::string& record);
bool kernel_line_relevant(const std::string& text);
// Path of the file holding our memory cgroup's oom_kill counter, from /proc/self/cgroup content.
std::optional<std::string> oom_counter_path(const std::string& proc_self_cgroup,
                                            const std::string& cgroup_root = "/sys/fs/cgroup");
// The oom_kill count of a cgroup v1 memory.oom_control or v2 memory.events text.
std::optional<int64_t> parse_oom_kill(std::string_view counters);
std::optional<int64_t> read_oom_kill(const std::string& counter_file);

}  // namespace host
