#include "host/job_scope.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "util/fd.hpp"
#include "util/text.hpp"

namespace host {

namespace {

using util::whole_number;

// The (positive) decimal number at the start of s, if any.
std::optional<pid_t> leading_pid(std::string_view s) {
  auto v = util::leading_number(s);
  return v ? std::optional<pid_t>(static_cast<pid_t>(*v)) : std::nullopt;
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// What a /proc/PID/stat says about a process.
struct ProcStat {
  pid_t ppid = 0, pgrp = 0;
  uint64_t start = 0;  // clock ticks after boot: tells a reused pid from the one seen
};

std::optional<ProcStat> read_stat(const std::string& proc, pid_t pid) {
  std::string path = proc + "/" + std::to_string(pid) + "/stat";
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return std::nullopt;
  }
  char buf[1024];
  ssize_t n = util::read_retry(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) {
    return std::nullopt;
  }
  buf[n] = '\0';
  // "pid (comm) S ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  //  utime stime cutime cstime priority nice threads itrealvalue starttime ..."
  // comm may hold spaces and ')': the fields start after the last ')'.
  char* close = std::strrchr(buf, ')');
  if (close == nullptr) {
    return std::nullopt;
  }
  ProcStat st;
  char state = 0;
  unsigned long long start = 0;
  if (std::sscanf(close + 1,
                  " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &state, &st.ppid, &st.pgrp, &start) != 4) {
    return std::nullopt;
  }
  st.start = start;
  return st;
}

std::optional<pid_t> thread_group(const std::string& proc, pid_t tid) {
  auto text = util::read_file(proc + "/" + std::to_string(tid) + "/status");
  if (!text) {
    return std::nullopt;
  }
  for (std::string_view line : util::split_lines(*text)) {
    if (line.substr(0, 5) == "Tgid:") {
      line.remove_prefix(5);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
        line.remove_prefix(1);
      }
      return leading_pid(line);
    }
  }
  return std::nullopt;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

std::string lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

}  // namespace

std::optional<std::string> pci_bus_id(std::string_view text) {
  for (size_t i = 0; i + 10 <= text.size(); ++i) {
    std::string_view s = text.substr(i, 10);
    if (s[4] != ':' || s[7] != ':' || (i > 0 && is_hex(text[i - 1]))) {
      continue;
    }
    bool ok = true;
    for (size_t k : {0, 1, 2, 3, 5, 6, 8, 9}) {
      ok = ok && is_hex(s[k]);
    }
    if (ok && (i + 10 == text.size() || !is_hex(text[i + 10]))) {
      std::string out(s);
      for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      return out;
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- process tree

ProcessTree::ProcessTree(pid_t root, std::string proc) : m_root(root), m_proc(std::move(proc)) {
  m_seen[root] = 0;  // its start time comes with the first scan
}

void ProcessTree::refresh() {
  DIR* dir = ::opendir(m_proc.c_str());
  if (dir == nullptr) {
    return;
  }
  struct Entry {
    pid_t pid;
    ProcStat st;
  };
  std::vector<Entry> all;
  while (dirent* e = ::readdir(dir)) {
    auto pid = whole_number(e->d_name);
    if (!pid || *pid == 0) {
      continue;
    }
    if (auto st = read_stat(m_proc, static_cast<pid_t>(*pid))) {
      all.push_back({static_cast<pid_t>(*pid), *st});
    }
  }
  ::closedir(dir);
  // The job: its first process, the group it leads, and everything below those.
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  std::vector<pid_t> todo;
  for (const auto& e : all) {
    children[e.st.ppid].push_back(e.pid);
    if (e.pid == m_root || e.st.pgrp == m_root) {
      todo.push_back(e.pid);
    }
  }
  todo.push_back(m_root);
  std::unordered_set<pid_t> members;
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    if (!members.insert(p).second) {
      continue;
    }
    if (auto it = children.find(p); it != children.end()) {
      todo.insert(todo.end(), it->second.begin(), it->second.end());
    }
  }
  for (const auto& e : all) {
    if (members.count(e.pid)) {
      m_seen[e.pid] = e.st.start;
      m_outside.erase(e.pid);
    } else {
      // A pid seen before that a process outside the job has now was reused.
      m_seen.erase(e.pid);
      m_outside[e.pid] = e.st.start;
    }
  }
}

bool ProcessTree::contains(pid_t pid) {
  if (pid <= 0) {
    return false;
  }
  // Known from a scan, and still the same process (or gone): no scan needed, so that
  // many records about one process (a neighbour's stream of Xids) cost one scan.
  const auto now = read_stat(m_proc, pid);
  auto known = [&](const std::unordered_map<pid_t, uint64_t>& m) {
    auto it = m.find(pid);
    return it != m.end() && (!now || it->second == 0 || it->second == now->start);
  };
  if (known(m_seen)) {
    return true;
  }
  if (known(m_outside)) {
    return false;
  }
  refresh();
  if (seen(pid)) {
    return true;
  }
  // A thread's id (the kernel names threads too): the job's if its process is.
  auto tgid = thread_group(m_proc, pid);
  return tgid && *tgid != pid && seen(*tgid);
}

// ---------------------------------------------------------------- the job's GPUs

// Which GPUs are the job's, from the variables that say so:
// - UUIDs (GPU-..., or a unique prefix, as CUDA takes them) name a GPU exactly;
// - SLURM_JOB_GPUS and NVIDIA_VISIBLE_DEVICES indices are the driver's device
//   numbers (/dev/nvidiaN, "Device Minor");
// - CUDA_VISIBLE_DEVICES indices count the GPUs CUDA sees, fastest first: they are
//   used only where that is the PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID, or every
//   GPU of the node is the same model), and only when no scheduler or container list
//   is given (under Slurm's device confinement CUDA renumbers the job's GPUs from 0).
// An entry that names no GPU the driver lists (a MIG instance, a bad index) makes
// the set unknown rather than partial: a partial set would drop records about the
// job's own GPU. No list at all (or NVIDIA_VISIBLE_DEVICES=all) is unknown too: the
// job may use any GPU of the node.
std::optional<std::set<std::string>> job_gpu_bus_ids(
    const std::function<std::optional<std::string>(const std::string&)>& get,
    const std::string& driver_dir) {
  auto cuda = get("CUDA_VISIBLE_DEVICES");
  auto slurm = get("SLURM_JOB_GPUS");
  auto nv = get("NVIDIA_VISIBLE_DEVICES");
  if (nv && (trim(*nv) == "all" || trim(*nv).empty())) {
    nv.reset();
  }
  if (!cuda && !slurm && !nv) {
    return std::nullopt;
  }
  struct Gpu {
    std::string bus, uuid, model;
    std::optional<size_t> minor;
  };
  std::vector<Gpu> gpus;
  if (DIR* dir = ::opendir(driver_dir.c_str())) {
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') {
        continue;
      }
      auto text = util::read_file(driver_dir + "/" + e->d_name + "/information");
      if (!text) {
        continue;
      }
      Gpu g;
      g.bus = e->d_name;
      for (std::string_view line : util::split_lines(*text)) {
        auto colon = line.find(':');
        if (colon == std::string_view::npos) {
          continue;
        }
        std::string key = trim(line.substr(0, colon));
        std::string value = trim(line.substr(colon + 1));
        if (key == "GPU UUID") {
          g.uuid = lower(value);
        } else if (key == "Bus Location") {
          g.bus = value;
        } else if (key == "Model") {
          g.model = value;
        } else if (key == "Device Minor") {
          if (auto n = whole_number(value)) {
            g.minor = *n;
          }
        }
      }
      if (auto pci = pci_bus_id(g.bus)) {
        g.bus = *pci;
        gpus.push_back(std::move(g));
      }
    }
    ::closedir(dir);
  }
  std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.bus < b.bus; });

  enum class Numbering { device_minor, pci_order };
  auto map = [&](const std::vector<std::string>& entries,
                 Numbering numbering) -> std::optional<std::set<std::string>> {
    std::set<std::string> out;
    for (const auto& entry : entries) {
      std::vector<const Gpu*> found;
      if (entry.rfind("gpu-", 0) == 0) {
        for (const auto& g : gpus) {
          if (g.uuid.rfind(entry, 0) == 0) {
            found.push_back(&g);
          }
        }
      } else if (auto index = whole_number(entry)) {
        if (numbering == Numbering::pci_order) {
          if (*index < gpus.size()) {
            found.push_back(&gpus[*index]);
          }
        } else {
          for (const auto& g : gpus) {
            if (g.minor == *index) {
              found.push_back(&g);
            }
          }
        }
      }
      if (found.size() != 1) {
        return std::nullopt;
      }
      out.insert(found.front()->bus);
    }
    return out;
  };
  auto entries = [](const std::string& list) {
    std::vector<std::string> out;
    std::string_view rest = list;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      if (std::string e = lower(trim(rest.substr(0, comma))); !e.empty()) {
        out.push_back(std::move(e));
      }
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    return out;
  };
  if (cuda) {
    auto list = entries(*cuda);
    if (list.empty()) {
      return std::set<std::string>{};  // CUDA sees no GPU
    }
    if (std::all_of(list.begin(), list.end(),
                    [](const std::string& e) { return e.rfind("gpu-", 0) == 0; })) {
      return map(list, Numbering::device_minor);
    }
  }
  if (slurm) {
    return map(entries(*slurm), Numbering::device_minor);
  }
  if (nv) {
    if (trim(*nv) == "none" || trim(*nv) == "void") {
      return std::set<std::string>{};
    }
    return map(entries(*nv), Numbering::device_minor);
  }
  const bool pci_order = get("CUDA_DEVICE_ORDER").value_or("") == "PCI_BUS_ID" ||
                         (!gpus.empty() && std::all_of(gpus.begin(), gpus.end(), [&](const Gpu& g) {
                           return g.model == gpus.front().model;
                         }));
  if (!pci_order) {
    return std::nullopt;
  }
  return map(entries(*cuda), Numbering::pci_order);
}

}  // namespace host
