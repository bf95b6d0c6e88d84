#include "gpu/visible.hpp"

#include <cctype>

namespace gpu {

namespace {

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : v + ",") {
    if (c == ',') {
      size_t b = cur.find_first_not_of(" \t");
      size_t e = cur.find_last_not_of(" \t");
      out.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool is_uuid(const std::string& s) { return s.rfind("GPU-", 0) == 0 || s.rfind("MIG-", 0) == 0; }

// The entries up to the first one CUDA would not accept.
std::vector<Selector> parse(const std::string& v) {
  std::vector<Selector> out;
  for (const auto& item : split_list(v)) {
    Selector s;
    if (is_uuid(item)) {
      s.by_uuid = true;
      s.uuid = item;
    } else if (!item.empty() && item.size() < 6 &&
               item.find_first_not_of("0123456789") == std::string::npos) {
      s.index = static_cast<unsigned>(std::stoul(item));
    } else {
      break;
    }
    out.push_back(s);
  }
  return out;
}

bool has_uuid(const std::vector<Selector>& s) {
  for (const auto& x : s) {
    if (x.by_uuid) {
      return true;
    }
  }
  return false;
}

}  // namespace

Selection job_gpus(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* k) -> const std::string* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : &it->second;
  };
  const std::string* cuda = get("CUDA_VISIBLE_DEVICES");
  const std::string* nvidia = get("NVIDIA_VISIBLE_DEVICES");
  const char* slurm_name = "SLURM_STEP_GPUS";
  const std::string* slurm = get(slurm_name);
  if (slurm == nullptr || slurm->empty()) {
    slurm_name = "SLURM_JOB_GPUS";
    slurm = get(slurm_name);
  }
  Selection sel;
  for (auto [name, v] :
       {std::pair{"CUDA_VISIBLE_DEVICES", cuda}, std::pair{"NVIDIA_VISIBLE_DEVICES", nvidia}}) {
    if (v != nullptr) {
      auto s = parse(*v);
      if (has_uuid(s)) {
        sel.selectors = std::move(s);
        sel.from = name;
        return sel;
      }
    }
  }
  if (slurm != nullptr && !slurm->empty()) {
    auto host = parse(*slurm);
    sel.from = slurm_name;
    sel.selectors = host;
    if (cuda == nullptr || *cuda == *slurm) {
      return sel;  // the same list: the host's indices
    }
    // CUDA_VISIBLE_DEVICES counts within the job's GPUs (Slurm renumbers them in the
    // job's device cgroup; a user may narrow them further): device i is host[i].
    auto within = parse(*cuda);
    std::vector<Selector> mapped;
    for (const auto& c : within) {
      if (c.index >= host.size()) {
        return sel;  // not indices into the job's list: keep Slurm's
      }
      mapped.push_back(host[c.index]);
    }
    sel.selectors = std::move(mapped);
    sel.from = std::string("CUDA_VISIBLE_DEVICES within ") + slurm_name;
    return sel;
  }
  if (cuda != nullptr) {
    sel.from = "CUDA_VISIBLE_DEVICES";
    sel.selectors = parse(*cuda);  // "", "-1": no GPU
    return sel;
  }
  if (nvidia != nullptr) {
    // A container runtime's list names the host's GPUs, which the container sees
    // renumbered from 0: every GPU NVML lists here is the job's, unless it says none.
    sel.from = "NVIDIA_VISIBLE_DEVICES";
    sel.all = !(nvidia->empty() || *nvidia == "none" || *nvidia == "void");
    return sel;
  }
  sel.all = true;
  return sel;
}

}  // namespace gpu
