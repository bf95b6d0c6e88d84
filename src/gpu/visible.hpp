// gpu/visible.hpp: which GPUs a job was given, from its environment.
//
// Pure (no NVML): the helper resolves these selectors against the devices NVML
// lists. Kept vendor-neutral so that another backend (ROCm SMI) can use it too.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpu {

struct Selector {
  bool by_uuid = false;  // "GPU-..." or "MIG-..." (a MIG instance resolves to its GPU)
  unsigned index = 0;    // NVML's index when !by_uuid
  std::string uuid;
};

struct Selection {
  bool all = false;                 // nothing restricts the job: every GPU of the host
  std::vector<Selector> selectors;  // in the job's order (CUDA device 0 first)
  std::string from;                 // the variable that decided, "" when none did
};

// Order of trust: UUIDs in CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES name
// devices exactly; SLURM_STEP_GPUS / SLURM_JOB_GPUS hold the host's (NVML) indices,
// and an index in a different CUDA_VISIBLE_DEVICES counts within that list (Slurm
// renumbers inside the job's device cgroup); then CUDA_VISIBLE_DEVICES indices
// (CUDA stops at the first entry it can't parse, and so does this; empty or "-1"
// selects none); a container's NVIDIA_VISIBLE_DEVICES indices mean every GPU the
// container sees ("none"/"void": none); nothing set: every GPU.
Selection job_gpus(const std::map<std::string, std::string>& env);

}  // namespace gpu
