#include "host/kernel_records.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "util/text.hpp"

namespace host {

namespace {
constexpr size_t k_max_kernel_lines = 2000;
constexpr size_t k_max_report_lines = 64;  // the kept lines of one OOM report

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

using util::whole_number;

// The (positive) decimal number at the start of s, if any.
std::optional<pid_t> leading_pid(std::string_view s) {
  auto v = util::leading_number(s);
  return v ? std::optional<pid_t>(static_cast<pid_t>(*v)) : std::nullopt;
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

bool at_or_below(std::string_view path, std::string_view base) {
  return path.substr(0, base.size()) == base &&
         (path.size() == base.size() || path[base.size()] == '/');
}

}  // namespace

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
      if (m_tree) {
        // Who is the job's, before the process about to be killed can be reaped (the
        // pid decides where the report names no cgroup or the job's can't be compared).
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
  auto pci = pci_bus_id(text);
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

}  // namespace host
