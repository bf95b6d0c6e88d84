// cli/cmd_stats.cpp: `gpualert stats`, the endings of many runs at once.
//
// Reads every <logdir>/<run>/report.json (never output.log: a shared log dir holds
// thousands of runs and their logs are large) and counts labels overall, per node
// (`host`) and per GPU, lists the nodes with repeated hardware endings as drain
// candidates, and the most frequent causes (label and rule) with one example run.
// A report that can't be read or parsed is skipped and counted, never fatal.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/parse_args.hpp"
#include "notify/config.hpp"
#include "report/run_report.hpp"
#include "util/text.hpp"

namespace cli {

namespace {

using nlohmann::json;

// Endings that point at the node's hardware rather than at the job.
constexpr const char* k_hardware_labels[] = {"gpu_lost", "gpu_ecc", "node_failure"};
// A node is a drain candidate from this many hardware endings in the window.
constexpr int k_drain_threshold = 2;
constexpr size_t k_top_causes = 10;
constexpr size_t k_malformed_listed = 5;
constexpr size_t k_max_threads = 8;

bool is_hardware(const std::string& label) {
  for (const char* l : k_hardware_labels) {
    if (label == l) {
      return true;
    }
  }
  return false;
}

// Runs per label at one place (all runs, a node, a GPU).
struct Tally {
  int runs = 0;
  int failed = 0;  // not success (and with a verdict)
  std::map<std::string, int> labels;
  void add(const std::string& label) {
    ++runs;
    ++labels[label];
    failed += label != "success" ? 1 : 0;
  }
};

// The newest run of a kind: its time, as written and as seconds, and its directory.
struct Latest {
  std::time_t t = -1;
  std::string when, run_dir;
  void see(std::time_t t2, const std::string& when2, const std::string& dir) {
    if (run_dir.empty() || t2 > t) {
      t = t2;
      when = when2;
      run_dir = dir;
    }
  }
};

struct Cause {
  int count = 0;
  Latest example;
};

struct Hardware {
  int count = 0;
  std::map<std::string, int> labels;
  std::set<std::string> gpus;
  Latest last;
};

struct Stats {
  std::vector<std::string> log_dirs;
  std::optional<std::time_t> since;
  int runs = 0;             // reports counted
  int no_report = 0;        // run dirs (output.log) without report.json
  int outside_window = 0;   // --since excluded
  int undated = 0;          // --since given, the report says no time we can read
  int no_verdict = 0;       // counted, but no label (a provisional report, say)
  int no_gpu = 0;           // counted, no GPU named by the report
  std::vector<std::pair<std::string, std::string>> malformed;  // first few: path, why
  int malformed_count = 0;
  std::vector<std::string> unreadable_dirs;  // log dirs that could not be listed
  std::map<std::string, int> states;
  Tally all;
  std::map<std::string, Tally> nodes;
  std::map<std::pair<std::string, std::string>, Tally> gpus;  // host, gpu
  std::map<std::pair<std::string, std::string>, Cause> causes;  // label, rule
  std::map<std::string, Hardware> hardware;                     // host
};

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

// The GPUs a run's ending is counted on: the one its verdict names (a PCI address from
// an Xid record, else a CUDA device index, mapped through the job's device list), else
// every GPU the job had.
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

// --- output -----------------------------------------------------------------

// Readable text for JSON strings (paths and names are bytes); exact bytes under
// KEY_b64 where they are not UTF-8, as report.json does.
void put_text(json& j, const std::string& key, const std::string& value) {
  j[key] = util::valid_utf8(value);
  if (!util::is_valid_utf8(value)) {
    j[key + "_b64"] = util::base64_encode(value);
  }
}

std::vector<std::pair<std::string, int>> by_count(const std::map<std::string, int>& m) {
  std::vector<std::pair<std::string, int>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

std::string label_list(const std::map<std::string, int>& labels) {
  std::string out;
  for (const auto& [label, n] : by_count(labels)) {
    out += (out.empty() ? "" : ", ") + util::printable_line(label) + " " + std::to_string(n);
  }
  return out;
}

template <typename Key>
std::vector<std::pair<Key, const Tally*>> worst_first(const std::map<Key, Tally>& m) {
  std::vector<std::pair<Key, const Tally*>> v;
  for (const auto& [k, t] : m) {
    v.emplace_back(k, &t);
  }
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second->failed != b.second->failed ? a.second->failed > b.second->failed
                                                : a.second->runs > b.second->runs;
  });
  return v;
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

json to_json(const Stats& s) {
  json j;
  j["log_dirs"] = json::array();
  for (const auto& d : s.log_dirs) {
    j["log_dirs"].push_back(util::valid_utf8(d));
  }
  j["since"] = s.since ? json(util::iso8601_local(*s.since)) : json(nullptr);
  j["runs"] = s.runs;
  j["skipped"] = {{"malformed", s.malformed_count},
                  {"no_report", s.no_report},
                  {"outside_window", s.outside_window},
                  {"undated", s.undated}};
  j["malformed"] = json::array();
  for (const auto& [path, why] : s.malformed) {
    json m;
    put_text(m, "path", path);
    m["error"] = util::valid_utf8(why);
    j["malformed"].push_back(m);
  }
  j["unreadable_log_dirs"] = json::array();
  for (const auto& d : s.unreadable_dirs) {
    j["unreadable_log_dirs"].push_back(util::valid_utf8(d));
  }
  j["states"] = s.states;
  j["no_verdict"] = s.no_verdict;
  j["labels"] = s.all.labels;
  j["nodes"] = json::object();
  for (const auto& [host, t] : s.nodes) {
    j["nodes"][util::valid_utf8(host)] = {{"runs", t.runs}, {"failed", t.failed}, {"labels", t.labels}};
  }
  j["gpus"] = json::array();
  for (const auto& [key, t] : worst_first(s.gpus)) {
    j["gpus"].push_back({{"host", util::valid_utf8(key.first)},
                         {"gpu", util::valid_utf8(key.second)},
                         {"runs", t->runs},
                         {"failed", t->failed},
                         {"labels", t->labels}});
  }
  j["runs_without_gpu"] = s.no_gpu;
  j["drain_candidates"] = json::array();
  for (const auto& [host, h] : drain_candidates(s)) {
    json d = {{"host", util::valid_utf8(host)},
              {"count", h->count},
              {"labels", h->labels},
              {"gpus", h->gpus},
              {"last", h->last.when}};
    put_text(d, "last_run", h->last.run_dir);
    j["drain_candidates"].push_back(d);
  }
  j["top_causes"] = json::array();
  for (const auto& [key, c] : top_causes(s)) {
    json cause = {{"label", key.first}, {"rule", key.second}, {"count", c->count},
                  {"last", c->example.when}};
    put_text(cause, "example", c->example.run_dir);
    j["top_causes"].push_back(cause);
  }
  return j;
}

void print_text(const Stats& s, std::FILE* out) {
  std::string dirs;
  for (const auto& d : s.log_dirs) {
    dirs += (dirs.empty() ? "" : ", ") + util::printable_line(d);
  }
  std::fprintf(out, "%d runs in %s", s.runs, dirs.c_str());
  if (s.since) {
    std::fprintf(out, " ended since %s", util::iso8601_local(*s.since).c_str());
  }
  std::fputs("\n", out);
  if (s.malformed_count > 0) {
    std::fprintf(out, "  skipped %d report.json that could not be read or parsed, e.g.\n",
                 s.malformed_count);
    for (const auto& [path, why] : s.malformed) {
      std::fprintf(out, "    %s\n", util::printable_line(why).c_str());
    }
  }
  if (s.no_report > 0) {
    std::fprintf(out,
                 "  %d runs without report.json (still running, or their wrapper is gone: "
                 "`gpualert sweep` reports those)\n",
                 s.no_report);
  }
  if (s.since && s.outside_window + s.undated > 0) {
    std::fprintf(out, "  %d runs ended earlier, %d with no readable time\n", s.outside_window,
                 s.undated);
  }
  for (const char* state : {"reconstructed", "provisional"}) {
    if (auto it = s.states.find(state); it != s.states.end()) {
      std::fprintf(out, "  %d %s reports%s\n", it->second, state,
                   std::string(state) == "reconstructed"
                       ? " (by `gpualert sweep`: the wrapper died with the job)"
                       : " (written while the scheduler was ending the job; not final)");
    }
  }
  if (s.no_verdict > 0) {
    std::fprintf(out, "  %d runs without a verdict\n", s.no_verdict);
  }

  std::fputs("\nLabels\n", out);
  for (const auto& [label, n] : by_count(s.all.labels)) {
    std::fprintf(out, "  %-22s %6d  %5.1f%%\n", util::printable_line(label).c_str(), n,
                 100.0 * n / std::max(1, s.all.runs));
  }

  auto drain = drain_candidates(s);
  std::fprintf(out, "\nDrain candidates (%d or more of %s on one node)\n", k_drain_threshold,
               "gpu_lost, gpu_ecc, node_failure");
  if (drain.empty()) {
    std::fputs("  none\n", out);
  }
  for (const auto& [host, h] : drain) {
    std::string gpus;
    for (const auto& g : h->gpus) {
      gpus += (gpus.empty() ? "" : ", ") + g;
    }
    std::fprintf(out, "  %-20s %3d  %s; last %s  %s%s%s\n", util::printable_line(host).c_str(),
                 h->count, label_list(h->labels).c_str(),
                 util::printable_line(h->last.when).c_str(),
                 util::printable_line(h->last.run_dir).c_str(), gpus.empty() ? "" : "; GPUs ",
                 util::printable_line(gpus).c_str());
  }

  std::fputs("\nTop causes (label, rule: runs; the latest)\n", out);
  auto causes = top_causes(s);
  if (causes.empty()) {
    std::fputs("  none\n", out);
  }
  for (const auto& [key, c] : causes) {
    std::fprintf(out, "  %6d  %s, %s  %s\n", c->count, util::printable_line(key.first).c_str(),
                 util::printable_line(key.second).c_str(),
                 util::printable_line(c->example.run_dir).c_str());
  }

  std::fputs("\nPer node (runs, failed: labels)\n", out);
  for (const auto& [host, t] : worst_first(s.nodes)) {
    std::fprintf(out, "  %-20s %6d %6d  %s\n", util::printable_line(host).c_str(), t->runs,
                 t->failed, label_list(t->labels).c_str());
  }

  // GPUs without a failure would bury the ones with: counted in one line (--json has all).
  std::fputs("\nPer GPU with failures (runs, failed: labels)\n", out);
  int healthy = 0;
  for (const auto& [key, t] : worst_first(s.gpus)) {
    if (t->failed == 0) {
      ++healthy;
      continue;
    }
    std::string where = util::printable_line(key.first + " " + key.second);
    std::fprintf(out, "  %-28s %6d %6d  %s\n", where.c_str(), t->runs, t->failed,
                 label_list(t->labels).c_str());
  }
  if (healthy > 0) {
    std::fprintf(out, "  %d GPUs had no failure\n", healthy);
  }
  if (s.no_gpu > 0) {
    std::fprintf(out, "  %d runs named no GPU\n", s.no_gpu);
  }
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace

int cmd_stats(int argc, char** argv) {
  CLI::App app{
      "Labels per node and per GPU across many run directories (their report.json only), the "
      "nodes with repeated hardware endings (gpu_lost, gpu_ecc, node_failure) as drain "
      "candidates, and the top causes with one example run each.",
      "gpualert stats"};
  std::vector<std::string> dirs;
  std::string config_file, since_text;
  bool as_json = false;
  app.add_option("--since", since_text, "only runs that ended in the last DURATION (e.g. 7d, 12h)")
      ->check(duration_validator());
  app.add_flag("--json", as_json, "one JSON object on stdout (keys in gpualert(1))");
  app.add_option("--config", config_file, "configuration file");
  app.add_option("LOGDIR", dirs,
                 "log directories (default: $GPUALERT_LOG_DIR, the configured log_dir, else "
                 "./gpualert-logs)");
  if (auto done = parse_args(app, argc, argv, "stats")) {
    return *done;
  }
  Stats s;
  if (!since_text.empty()) {
    auto d = util::parse_duration(since_text);  // valid: checked while parsing
    s.since = std::time(nullptr) -
              static_cast<std::time_t>(std::chrono::duration_cast<std::chrono::seconds>(*d).count());
  }
  auto config = notify::load_config(config_file);
  if (!config) {
    std::fprintf(stderr, "gpualert: error: %s\n", config.error().c_str());
    return 2;
  }
  if (dirs.empty()) {
    const char* e = std::getenv("GPUALERT_LOG_DIR");
    dirs.push_back(e != nullptr && *e != '\0'
                       ? e
                       : (config->log_dir.empty() ? "gpualert-logs" : config->log_dir));
  }
  std::set<std::string> seen;
  std::vector<std::string> runs;
  for (const auto& d : dirs) {
    std::string abs = absolute(d);
    if (seen.insert(abs).second) {
      s.log_dirs.push_back(abs);
      list_run_dirs(s, abs, runs);
    }
  }
  std::sort(runs.begin(), runs.end());  // the same examples for the same runs
  count_runs(s, runs);
  for (const auto& d : s.unreadable_dirs) {
    std::fprintf(stderr, "gpualert: stats: cannot read %s\n", d.c_str());
  }
  if (as_json) {
    std::string text = to_json(s).dump(2, ' ', false, json::error_handler_t::replace);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputs("\n", stdout);
  } else {
    print_text(s, stdout);
  }
  std::fflush(stdout);
  // Every count above stands; a log dir that could not be read is an error all the same.
  return s.unreadable_dirs.empty() ? 0 : 1;
}

}  // namespace cli
