// host/job_scope.hpp: what is the job's on a shared host: its processes and its GPUs.
//
// The kernel log names processes by pid and GPUs by PCI bus id; KernelRecordFilter
// (kernel_records.hpp) asks these to tell the job's records from other jobs'.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

namespace host {

// The job's processes: its first process, that one's descendants, and whatever runs
// in the process group it leads. A pid seen once stays the job's for the run (a record
// may come about a process that has exited), unless another process outside the job
// has it since.
class ProcessTree {
 public:
  explicit ProcessTree(pid_t root, std::string proc = "/proc");
  // Whether pid (a process or one of its threads) is or was one of the job's. A pid
  // not seen in a scan yet, or since reused, costs one scan of /proc.
  bool contains(pid_t pid);
  // Scans /proc for the job's processes now (before a process the kernel is about
  // to kill can be reaped).
  void refresh();
  pid_t root() const { return m_root; }

 private:
  bool seen(pid_t pid) const { return m_seen.count(pid) > 0; }
  pid_t m_root;
  std::string m_proc;
  // pid -> start time (clock ticks after boot; 0: not scanned yet), which tells a
  // reused pid from the process seen.
  std::unordered_map<pid_t, uint64_t> m_seen, m_outside;
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

// The PCI bus ids of the job's GPUs, from its environment (`get` returns a variable or
// none) and the NVIDIA driver's /proc/driver/nvidia/gpus/*/information. None where
// they can't be told (see the rule in evidence.cpp).
std::optional<std::set<std::string>> job_gpu_bus_ids(
    const std::function<std::optional<std::string>(const std::string&)>& get,
    const std::string& driver_dir = "/proc/driver/nvidia/gpus");

// The first PCI address "dddd:bb:dd" in text (the function, ".0", left out), lower case.
std::optional<std::string> pci_bus_id(std::string_view text);

}  // namespace host
