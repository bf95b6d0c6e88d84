// cli/stats.cpp: reading and counting many run directories (see stats.hpp).
#include "cli/stats.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include "util/text.hpp"

namespace cli {

namespace {

constexpr size_t k_max_threads = 8;

bool is_hardware(const std::string& label) {
  for (const char* l : k_hardware_labels) {
    if (label == l) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) {
      comma = text.size();
    }
    std::string item(util::trim_blanks(std::string_view(text).substr(start, comma - start)));
    if (!item.empty()) {
      out.push_back(std::move(item));
    }
    start = comma + 1;
  }
  return out;
}

// A GPU as a device list names it: an index ("gpu 3"), or a UUID as written.
std::optional<std::string> gpu_name(const std::string& item) {
  if (util::whole_number(item)) {
    return "gpu " + item;
  }
  if (item.rfind("GPU-", 0) == 0 || item.rfind("MIG-", 0) == 0) {
    return item;
  }
  return std::nullopt;  // "NoDevFiles", "-1", "all": no GPU in particular
}

// The job's GPUs in the driver's numbering where the report has it: SLURM_JOB_GPUS
// holds the node's device numbers (CUDA_VISIBLE_DEVICES is renumbered from 0 under
// Slurm's device confinement), else CUDA_VISIBLE_DEVICES.
std::vector<std::string> job_gpus(const report::RunReport& r) {
  for (const char* key : {"SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"}) {
    auto it = r.env.find(key);
    if (it == r.env.end()) {
      continue;
    }
    std::vector<std::string> out;
    for (const auto& item : split_list(it->second)) {
      if (auto g = gpu_name(item)) {
        out.push_back(*g);
      }
    }
    return out;
  }
  return {};
}

// What counting needs of one run directory, read by a worker thread.
struct RunFacts {
  enum class Kind { counted, no_report, not_a_run, malformed } kind = Kind::not_a_run;
  std::string error;  // malformed: why
  std::string host, state, label, rule, when;
  bool has_verdict = false;
  std::optional<std::time_t> t;
  std::vector<std::string> gpus;
};

RunFacts read_run(const std::string& run_dir) {
  RunFacts f;
  const std::string report_path = run_dir + "/report.json";
  auto r = report::load(report_path);
  if (!r) {
    if (::access(report_path.c_str(), F_OK) != 0 && errno == ENOENT) {
      // Still running, or its wrapper is gone (`gpualert sweep`); else not a run at all.
      f.kind = ::access((run_dir + "/output.log").c_str(), F_OK) == 0 ? RunFacts::Kind::no_report
                                                                      : RunFacts::Kind::not_a_run;
    } else {
      f.kind = RunFacts::Kind::malformed;
      f.error = r.error();
    }
    return f;
  }
  f.kind = RunFacts::Kind::counted;
  f.t = util::parse_iso8601(r->ended);
  f.when = r->ended;
  if (!f.t) {
    f.t = util::parse_iso8601(r->started);
    f.when = r->started;
  }
  f.host = r->host.empty() ? "(unknown)" : r->host;
  f.state = r->state;
  f.has_verdict = r->verdict && !r->verdict->label.empty();
  if (f.has_verdict) {
    f.label = r->verdict->label;
    f.rule = r->verdict->rule;
    f.gpus = gpus_of(*r);
  }
  return f;
}

void count_run(Stats& s, const std::string& run_dir, const RunFacts& f) {
  switch (f.kind) {
    case RunFacts::Kind::not_a_run:
      return;
    case RunFacts::Kind::no_report:
      ++s.no_report;
      return;
    case RunFacts::Kind::malformed:
      if (++s.malformed_count <= static_cast<int>(k_malformed_listed)) {
        s.malformed.emplace_back(run_dir + "/report.json", f.error);
      }
      return;
    case RunFacts::Kind::counted:
      break;
  }
  if (s.since) {
    if (!f.t) {
      ++s.undated;
      return;
    }
    if (*f.t < *s.since) {
      ++s.outside_window;
      return;
    }
  }
  const std::time_t t = f.t.value_or(-1);
  ++s.runs;
  ++s.states[f.state];
  if (!f.has_verdict) {
    ++s.no_verdict;
    return;
  }
  s.all.add(f.label);
  s.nodes[f.host].add(f.label);
  if (f.gpus.empty()) {
    ++s.no_gpu;
  }
  for (const auto& g : f.gpus) {
    s.gpus[{f.host, g}].add(f.label);
  }
  if (f.label != "success") {
    Cause& c = s.causes[{f.label, f.rule}];
    ++c.count;
    c.example.see(t, f.when, run_dir);
  }
  if (is_hardware(f.label)) {
    Hardware& h = s.hardware[f.host];
    ++h.count;
    ++h.labels[f.label];
    h.gpus.insert(f.gpus.begin(), f.gpus.end());
    h.last.see(t, f.when, run_dir);
  }
}

bool is_dir(const std::string& path, const struct dirent* e) {
  if (e->d_type == DT_DIR) {
    return true;
  }
  if (e->d_type != DT_UNKNOWN) {
    return false;  // symbolic links included, as `sweep` does
  }
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void list_run_dirs(Stats& s, const std::string& dir, std::vector<std::string>& runs) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    s.unreadable_dirs.push_back(dir + ": " + std::strerror(errno));
    return;
  }
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') {
      continue;
    }
    std::string path = dir + "/" + e->d_name;
    if (is_dir(path, e)) {
      runs.push_back(std::move(path));
    }
  }
  ::closedir(d);
}

// Reads the runs' reports with a few threads: on a shared (network) file system each
// open waits for the server, and the waits overlap. Counting is done afterwards in the
// runs' order, so the output does not depend on which thread read what.
void count_runs(Stats& s, const std::vector<std::string>& runs) {
  std::vector<RunFacts> facts(runs.size());
  std::atomic<size_t> next{0};
  constexpr size_t k_batch = 64;
  auto work = [&] {
    for (size_t begin; (begin = next.fetch_add(k_batch)) < runs.size();) {
      for (size_t i = begin; i < std::min(begin + k_batch, runs.size()); ++i) {
        facts[i] = read_run(runs[i]);
      }
    }
  };
  const size_t threads = std::min<size_t>(k_max_threads, (runs.size() + 255) / 256);
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) {
    pool.emplace_back(work);
  }
  work();
  for (auto& t : pool) {
    t.join();
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    count_run(s, runs[i], facts[i]);
  }
}

}  // namespace

std::vector<std::string> gpus_of(const report::RunReport& r) {
  std::vector<std::string> listed = job_gpus(r);
  if (r.verdict) {
    const auto& f = r.verdict->fields;
    if (auto pci = f.find("pci"); pci != f.end() && !pci->second.empty()) {
      return {"pci " + pci->second};
    }
    if (auto gpu = f.find("gpu"); gpu != f.end()) {
      if (auto index = util::whole_number(gpu->second)) {
        if (*index < listed.size()) {
          return {listed[*index]};
        }
        return {"gpu " + gpu->second};
      }
    }
  }
  return listed;
}

std::vector<std::pair<std::string, const Hardware*>> drain_candidates(const Stats& s) {
  std::vector<std::pair<std::string, const Hardware*>> v;
  for (const auto& [host, h] : s.hardware) {
    if (h.count >= k_drain_threshold) {
      v.emplace_back(host, &h);
    }
  }
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second->count != b.second->count ? a.second->count > b.second->count
                                              : a.second->last.t > b.second->last.t;
  });
  return v;
}

std::vector<std::pair<std::pair<std::string, std::string>, const Cause*>> top_causes(
    const Stats& s) {
  std::vector<std::pair<std::pair<std::string, std::string>, const Cause*>> v;
  for (const auto& [k, c] : s.causes) {
    v.emplace_back(k, &c);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second->count > b.second->count; });
  if (v.size() > k_top_causes) {
    v.resize(k_top_causes);
  }
  return v;
}

Stats collect_stats(const std::vector<std::string>& log_dirs, std::optional<std::time_t> since) {
  Stats s;
  s.since = since;
  std::set<std::string> seen;
  std::vector<std::string> runs;
  for (const auto& d : log_dirs) {
    if (seen.insert(d).second) {
      s.log_dirs.push_back(d);
      list_run_dirs(s, d, runs);
    }
  }
  std::sort(runs.begin(), runs.end());  // the same examples for the same runs
  count_runs(s, runs);
  return s;
}

}  // namespace cli
