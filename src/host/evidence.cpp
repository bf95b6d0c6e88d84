#include "host/evidence.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "util/text.hpp"

namespace host {

namespace {
constexpr size_t k_max_kernel_lines = 2000;
constexpr size_t k_max_report_lines = 64;  // the kept lines of one OOM report

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

// s as a whole decimal number, if it is one.
std::optional<size_t> whole_number(std::string_view s) {
  size_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return v;
}

// The (positive) decimal number at the start of s, if any.
std::optional<pid_t> leading_pid(std::string_view s) {
  pid_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data() || v <= 0) {
    return std::nullopt;
  }
  return v;
}

// The number after `key` (first occurrence, or the last when `last`), skipping a quote.
std::optional<pid_t> pid_after(std::string_view text, std::string_view key, bool last = false) {
  auto at = last ? text.rfind(key) : text.find(key);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(at + key.size());
  if (!rest.empty() && rest.front() == '\'') {
    rest.remove_prefix(1);
  }
  return leading_pid(rest);
}

// "name[1234]" just before `at` (segfault and trap lines).
std::optional<pid_t> bracketed_pid_before(std::string_view text, size_t at) {
  auto close = text.rfind(']', at);
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  auto open = text.rfind('[', close);
  if (open == std::string_view::npos) {
    return std::nullopt;
  }
  auto pid = whole_number(text.substr(open + 1, close - open - 1));
  if (!pid || *pid == 0) {
    return std::nullopt;
  }
  return static_cast<pid_t>(*pid);
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// The first PCI address "dddd:bb:dd" in text, lower case, without the function.
std::optional<std::string> pci_in(std::string_view text) {
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

bool at_or_below(std::string_view path, std::string_view base) {
  return path.substr(0, base.size()) == base &&
         (path.size() == base.size() || path[base.size()] == '/');
}

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

// ---------------------------------------------------------------- process tree

ProcessTree::ProcessTree(pid_t root, std::string proc) : m_root(root), m_proc(std::move(proc)) {
  m_seen.insert(root);
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
      m_seen.insert(e.pid);
    } else if (e.pid != m_root) {
      // A pid seen before that now belongs to a process outside the job was reused.
      m_seen.erase(e.pid);
    }
  }
}

bool ProcessTree::contains(pid_t pid) {
  if (pid <= 0) {
    return false;
  }
  if (!seen(pid)) {
    refresh();
  } else if (pid != m_root && ::access((m_proc + "/" + std::to_string(pid)).c_str(), F_OK) == 0) {
    refresh();  // alive: still ours, or the pid was reused by another process since
  }
  if (seen(pid)) {
    return true;
  }
  // A thread's id (the kernel names threads too): the job's if its process is.
  auto tgid = thread_group(m_proc, pid);
  return tgid && *tgid != pid && seen(*tgid);
}

// ---------------------------------------------------------------- record filter

KernelRecordFilter::KernelRecordFilter(JobScope scope, std::shared_ptr<ProcessTree> tree)
    : m_scope(std::move(scope)), m_tree(std::move(tree)) {}

bool KernelRecordFilter::pid_is_job(pid_t pid) { return m_tree && m_tree->contains(pid); }

void KernelRecordFilter::keep(std::string line) {
  if (m_kept.size() < k_max_kernel_lines) {
    m_kept.push_back(std::move(line));
  }
}

void KernelRecordFilter::close_report() {
  if (!m_report) {
    return;
  }
  Report r = std::move(*m_report);
  m_report.reset();
  bool job = false;
  if (m_scope.memcg && r.task_memcg) {
    job = at_or_below(*r.task_memcg, *m_scope.memcg);
  } else {
    job = std::any_of(r.pids.begin(), r.pids.end(), [&](pid_t p) { return pid_is_job(p); });
  }
  for (pid_t p : r.pids) {
    (job ? m_job_kills : m_other_kills).insert(p);
  }
  if (!job) {
    m_dropped += r.lines.size();
    return;
  }
  for (auto& l : r.lines) {
    keep(std::move(l));
  }
}

void KernelRecordFilter::add(std::string_view text, const std::string& line) {
  // ---- the OOM killer's report
  const bool starts_report = contains(text, "invoked oom-killer");
  const bool ends_report = contains(text, "Killed process ");
  if (text.substr(0, 11) == "oom_reaper:") {
    // After the report, about its victim.
    auto pid = pid_after(text, "reaped process ");
    if (pid && (m_job_kills.count(*pid) || (!m_other_kills.count(*pid) && pid_is_job(*pid)))) {
      keep(line);
    } else {
      ++m_dropped;
    }
    return;
  }
  if (starts_report || ends_report || contains(text, "oom-kill:") ||
      contains(text, "Out of memory") || contains(text, "Memory cgroup out of memory") ||
      contains(text, "memory: usage") || contains(text, " killed as a result of limit of ")) {
    if (starts_report) {
      close_report();
      if (!m_scope.memcg && m_tree) {
        // Who is the job's, before the process about to be killed can be reaped.
        m_tree->refresh();
      }
    }
    if (!m_report) {
      m_report.emplace();  // the report's start was before the run, or not kept
    }
    Report& r = *m_report;
    if (r.lines.size() < k_max_report_lines) {
      r.lines.push_back(line);
    }
    // "oom-kill:constraint=...,oom_memcg=/a,task_memcg=/a/b,task=python3,pid=42,uid=0"
    if (auto at = text.find("task_memcg="); at != std::string_view::npos) {
      std::string_view rest = text.substr(at + 11);
      auto end = rest.find(",task=");
      r.task_memcg =
          std::string(rest.substr(0, end == std::string_view::npos ? rest.find(',') : end));
    }
    if (contains(text, "oom-kill:")) {
      if (auto pid = pid_after(text, ",pid=", true)) {
        r.pids.push_back(*pid);
      }
    }
    // Kernels before 4.19: "Task in /a/b killed as a result of limit of /a".
    if (auto at = text.find("Task in "); at != std::string_view::npos) {
      std::string_view rest = text.substr(at + 8);
      if (auto end = rest.find(" killed as a result of limit of "); end != std::string_view::npos) {
        r.task_memcg = std::string(rest.substr(0, end));
      }
    }
    // "... Kill process 42 (python3) score 900 or sacrifice child" (older kernels)
    if (auto pid = pid_after(text, "Kill process ")) {
      r.pids.push_back(*pid);
    }
    if (ends_report) {
      if (auto pid = pid_after(text, "Killed process ")) {
        r.pids.push_back(*pid);
      }
      close_report();
    }
    return;
  }

  // ---- a process's crash: "python3[42]: segfault at 0 ip ...", "traps: python3[42] general
  // protection"
  for (std::string_view needle :
       {std::string_view("segfault at"), std::string_view("general protection")}) {
    if (auto at = text.find(needle); at != std::string_view::npos) {
      auto pid = bracketed_pid_before(text, at);
      if (pid && pid_is_job(*pid)) {
        keep(line);
      } else {
        ++m_dropped;
      }
      return;
    }
  }

  // ---- the GPU driver: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, ..."
  std::optional<pid_t> pid = pid_after(text, "pid=");
  if (!pid) {
    pid = pid_after(text, " pid ");  // amdgpu: "process python3 pid 1234 thread ..."
  }
  if (pid) {
    if (pid_is_job(*pid)) {
      keep(line);
    } else {
      ++m_dropped;
    }
    return;
  }
  if (!m_gpus_asked) {
    m_gpus_asked = true;
    m_gpus = m_scope.gpus ? m_scope.gpus() : std::nullopt;
  }
  auto pci = pci_in(text);
  if (m_gpus && pci) {
    if (m_gpus->count(*pci)) {
      keep(line);
    } else {
      ++m_dropped;
    }
    return;
  }
  keep(line + (m_gpus ? "  [not attributed to this job: the record names no process and no GPU]"
                      : "  [not attributed to this job: the record names no process, and the "
                        "job's GPUs are not known]"));
}

void KernelRecordFilter::finish() { close_report(); }

// ---------------------------------------------------------------- kernel log records

std::string format_kmsg_record(const std::string& record) {
  // prio,seq,usec,flags;text  (continuation lines start with a space; ignored)
  auto semi = record.find(';');
  if (semi == std::string::npos) {
    return {};
  }
  std::string head = record.substr(0, semi);
  std::string text = record.substr(semi + 1);
  if (auto nl = text.find('\n'); nl != std::string::npos) {
    text.resize(nl);
  }
  unsigned long long usec = 0;
  int prio = 0;
  unsigned long long seq = 0;
  if (std::sscanf(head.c_str(), "%d,%llu,%llu", &prio, &seq, &usec) != 3) {
    return {};
  }
  char stamp[48];
  std::snprintf(stamp, sizeof stamp, "[%5llu.%06llu] ", usec / 1000000, usec % 1000000);
  return stamp + text;
}

bool kernel_line_relevant(std::string_view text) {
  static constexpr std::string_view k_needles[] = {
      "invoked oom-killer", "Out of memory", "oom-kill:", "oom_reaper", "Killed process",
      "Memory cgroup out of memory", "NVRM:", "Xid", "nvidia", "segfault at", "general protection",
      "memory: usage",
      // AMD's and Intel's GPU drivers: page faults, ring timeouts, resets, hangs.
      "amdgpu", "i915", "GPU HANG"};
  for (std::string_view n : k_needles) {
    if (contains(text, n)) {
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------- cgroups

namespace {

// Calls f(controllers, path) for each "N:controllers:path" line of /proc/self/cgroup.
template <class F>
void each_cgroup_line(const std::string& content, F&& f) {
  for (std::string_view line : util::split_lines(content)) {
    auto c1 = line.find(':');
    auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      continue;
    }
    f(line.substr(0, c1), line.substr(c1 + 1, c2 - c1 - 1), line.substr(c2 + 1));
  }
}

bool has_memory_controller(std::string_view ctrls) {
  for (std::string_view rest = ctrls; !rest.empty();) {
    auto comma = rest.find(',');
    if (rest.substr(0, comma) == "memory") {
      return true;
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

}  // namespace

std::optional<std::string> oom_counter_path(const std::string& content, const std::string& root) {
  std::optional<std::string> v1, v2;
  each_cgroup_line(content, [&](std::string_view id, std::string_view ctrls, std::string_view p) {
    std::string path(p == "/" ? std::string_view() : p);
    if (!v1 && has_memory_controller(ctrls)) {
      v1 = root + "/memory" + path + "/memory.oom_control";
    } else if (ctrls.empty() && id == "0") {
      v2 = root + path + "/memory.events";
      if (::access(v2->c_str(), R_OK) != 0) {
        v2 = root + "/unified" + path + "/memory.events";
      }
    }
  });
  return v1 ? v1 : v2;
}

std::optional<std::string> memory_cgroup_path(const std::string& content) {
  std::optional<std::string> v1, v2;
  each_cgroup_line(content, [&](std::string_view id, std::string_view ctrls, std::string_view p) {
    if (!v1 && has_memory_controller(ctrls)) {
      v1 = std::string(p);
    } else if (ctrls.empty() && id == "0") {
      v2 = std::string(p);
    }
  });
  std::optional<std::string> path = v1 ? v1 : v2;
  while (path && path->size() > 1 && path->back() == '/') {
    path->pop_back();
  }
  // The root holds every process of the machine (or of a container whose cgroup
  // namespace hides the real path): nothing can be told apart by it.
  if (!path || path->empty() || *path == "/" || path->front() != '/') {
    return std::nullopt;
  }
  return path;
}

std::optional<int64_t> parse_oom_kill(std::string_view counters) {
  std::optional<int64_t> out;
  constexpr std::string_view key = "oom_kill ";
  for (std::string_view line : util::split_lines(counters)) {
    if (line.substr(0, key.size()) != key) {
      continue;
    }
    std::string_view digits = line.substr(key.size());
    int64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc() && end != digits.data()) {
      out = value;
    }
  }
  return out;
}

std::optional<int64_t> read_oom_kill(const std::string& file) {
  auto text = util::read_file(file);
  if (!text) {
    return std::nullopt;
  }
  return parse_oom_kill(*text);
}

// ---------------------------------------------------------------- GPUs

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
      if (auto pci = pci_in(g.bus)) {
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

// ---------------------------------------------------------------- the watch

void EvidenceWatch::open_kernel_log(pid_t job) {
  m_kmsg.reset(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!m_kmsg.valid()) {
    m_sources["kernel_log"] = std::string("not available: /dev/kmsg: ") + std::strerror(errno);
    return;
  }
  ::lseek(m_kmsg.get(), 0, SEEK_END);
  m_kernel_log_read = true;
  m_sources["kernel_log"] = "read (/dev/kmsg)";
  JobScope scope;
  scope.memcg = m_memcg;
  // Asked when the first GPU record arrives, not on every job's start.
  scope.gpus = [] {
    return job_gpu_bus_ids([](const std::string& name) -> std::optional<std::string> {
      const char* v = std::getenv(name.c_str());
      return v ? std::optional<std::string>(v) : std::nullopt;
    });
  };
  m_filter = std::make_unique<KernelRecordFilter>(
      std::move(scope), job > 0 ? std::make_shared<ProcessTree>(job) : nullptr);
}

EvidenceWatch EvidenceWatch::start() {
  EvidenceWatch w;
  w.m_sources["kernel_log"] = "not available: not opened";
  auto content = util::read_file("/proc/self/cgroup");
  if (auto p = content ? oom_counter_path(*content) : std::nullopt) {
    w.m_oom_counter_path = *p;
    w.m_oom_before = read_oom_kill(*p);
  }
  if (content) {
    w.m_memcg = memory_cgroup_path(*content);
  }
  w.m_sources["cgroup_oom"] =
      w.m_oom_before ? "read (" + w.m_oom_counter_path + ")"
                     : std::string("not available: no readable memory cgroup oom_kill counter");
  return w;
}

void EvidenceWatch::on_readable() {
  if (!m_kmsg.valid()) {
    return;
  }
  // One read is one record, and needs room for the longest (8 KiB, else EINVAL).
  m_record.resize(8192);
  for (;;) {
    ssize_t n = ::read(m_kmsg.get(), m_record.data(), m_record.size());
    if (n < 0 && errno == EPIPE) {
      ++m_overruns;  // records were overwritten before they were read; go on with the next
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    std::string line = format_kmsg_record(m_record.substr(0, static_cast<size_t>(n)));
    auto text_at = line.find("] ");
    if (line.empty() || text_at == std::string::npos) {
      continue;
    }
    std::string_view text = std::string_view(line).substr(text_at + 2);
    if (kernel_line_relevant(text)) {
      m_filter->add(text, line);
    }
  }
}

void EvidenceWatch::finish() {
  if (m_oom_before) {
    m_oom_after = read_oom_kill(m_oom_counter_path);
  }
  if (!m_kmsg.valid()) {
    return;
  }
  on_readable();
  m_filter->finish();
  m_kmsg.reset();
  std::string& said = m_sources["kernel_log"];
  if (m_filter->dropped() > 0) {
    said += "; " + std::to_string(m_filter->dropped()) +
            " record(s) about other processes or GPUs left out";
  }
  if (m_overruns > 0) {
    said += "; the kernel overwrote records before they could be read (" +
            std::to_string(m_overruns) + " time(s))";
  }
}

const std::vector<std::string>& EvidenceWatch::kernel_lines() const {
  static const std::vector<std::string> k_none;
  return m_filter ? m_filter->kept() : k_none;
}

std::optional<int64_t> EvidenceWatch::cgroup_oom_kills() const {
  if (m_oom_before && m_oom_after) {
    return *m_oom_after - *m_oom_before;
  }
  return std::nullopt;
}

}  // namespace host
