// cli/cmd_stats.cpp: `gpualert stats`, the endings of many runs at once.
//
// Prints what cli/stats.hpp counted: as text for a person, or one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/stats.hpp"
#include "config/config.hpp"
#include "util/text.hpp"

namespace cli {

namespace {

using nlohmann::json;

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
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
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
    j["nodes"][util::valid_utf8(host)] = {
        {"runs", t.runs}, {"failed", t.failed}, {"labels", t.labels}};
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
    json cause = {
        {"label", key.first}, {"rule", key.second}, {"count", c->count}, {"last", c->example.when}};
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

// The log dir as an absolute path without "." or "..", nor a trailing '/' (so that
// "logs" and "logs/" are one log dir, and run dirs are shown as "logs/run").
std::string absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  if (ec) {
    return path;
  }
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') {
    out.pop_back();
  }
  return out;
}

}  // namespace

int cmd_stats(int argc, char** argv) {
  Options options(
      "gpualert stats",
      "Labels per node and per GPU across many run directories (their report.json only), the "
      "nodes with repeated hardware endings (gpu_lost, gpu_ecc, node_failure) as drain "
      "candidates, and the top causes with one example run each.");
  std::vector<std::string> dirs;
  std::string config_file, since_text;
  bool as_json = false;
  options.value("--since", since_text, "only runs that ended in the last DURATION (e.g. 7d, 12h)")
      .check(check_duration, "DURATION");
  options.flag("--json", as_json, "one JSON object on stdout (keys in gpualert(1))");
  options.value("--config", config_file, "configuration file");
  options.positionals("LOGDIR", dirs,
                      "log directories (default: $GPUALERT_LOG_DIR, the configured log_dir, else "
                      "./gpualert-logs)");
  if (auto done = options.parse(argc, argv, "stats")) {
    return *done;
  }
  std::optional<std::time_t> since;
  if (!since_text.empty()) {
    auto d = util::parse_duration(since_text);  // valid: checked while parsing
    since = std::time(nullptr) -
            static_cast<std::time_t>(std::chrono::duration_cast<std::chrono::seconds>(*d).count());
  }
  auto config = config::load_config(config_file);
  if (!config) {
    std::fprintf(stderr, "gpualert: error: %s\n", config.error().c_str());
    return 2;
  }
  if (dirs.empty()) {
    dirs.push_back(config::log_dir(*config));
  }
  std::vector<std::string> log_dirs;
  for (const auto& d : dirs) {
    log_dirs.push_back(absolute(d));
  }
  Stats s = collect_stats(log_dirs, since);
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
