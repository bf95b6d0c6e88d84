// gpu/watch.hpp: `run`'s side of the GPU helper (gpualert-gpu).
//
// gpualert is a static PIE and can't dlopen NVML, so a small dynamically linked
// helper installed beside it does the sampling in its own process (never on the
// copy path). `run` starts it only when an NVIDIA driver is present: a host without
// one pays a stat. At the end `run` stops it and reads its summary into report.json.
#pragma once

#include <sys/types.h>

#include <string>

#include "report/run_report.hpp"

namespace gpu {

struct Watch {
  pid_t pid = -1;
  std::string run_dir;
  std::string unavailable;  // why no helper runs ("" while one does)
};

constexpr const char* k_helper_name = "gpualert-gpu";
constexpr const char* k_summary_file = "gpus-summary.json";

// interval_s == 0: sampling is off (configuration). The driver check looks at
// /proc/driver/nvidia/version, or at the file GPUALERT_NVIDIA_DRIVER_FILE names
// (tests); the helper loads libnvidia-ml.so.1, or GPUALERT_NVML_LIBRARY (tests).
Watch start(const std::string& run_dir, pid_t job_pid, unsigned interval_s);

// Stops the helper (SIGTERM, then SIGKILL after a few seconds), and puts its
// summary in rep.gpus and rep.sources["gpu"].
void finish(Watch& w, report::RunReport& rep);

// Reads gpus-summary.json of run_dir into rep (gpus, sources["gpu"], warnings);
// false, and rep unchanged, when there is none that can be read.
bool read_summary(const std::string& run_dir, report::RunReport& rep);

// The Xids in rep.gpus as the kernel words them, for the classifier's host
// evidence: "NVRM: Xid (PCI:0000:19:00): 79, reported by NVML for GPU-...".
std::vector<std::string> xid_lines(const report::RunReport& rep);

}  // namespace gpu
