#include "classify/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <tuple>

#include "classify/case_dir.hpp"
#include "classify/rule_hits.hpp"
#include "classify/rules.hpp"
#include "classify/taxonomy.hpp"

namespace classify {

namespace fs = std::filesystem;

std::vector<std::string> find_cases(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const auto& root : roots) {
    std::error_code ec;
    if (fs::exists(fs::path(root) / "case.json", ec)) {
      out.push_back(root);
    }
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && fs::exists(it->path() / "case.json", ec)) {
        out.push_back(it->path().string());
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Scores score(const std::vector<std::pair<std::string, std::string>>& pairs) {
  Scores s;
  std::set<std::string> present;
  std::map<std::string, int> tp, fp, fn;
  for (const auto& [gold, pred] : pairs) {
    present.insert(gold);
    present.insert(pred);
    ++s.confusion[gold][pred];
    if (gold == pred) {
      ++tp[gold];
    } else {
      ++fp[pred];
      ++fn[gold];
    }
  }
  double sum = 0;
  for (const auto& label : present) {
    LabelScore ls;
    ls.support = tp[label] + fn[label];
    int predicted = tp[label] + fp[label];
    ls.precision = predicted ? static_cast<double>(tp[label]) / predicted : 0.0;
    ls.recall = ls.support ? static_cast<double>(tp[label]) / ls.support : 0.0;
    ls.f1 = (ls.precision + ls.recall) > 0
                ? 2 * ls.precision * ls.recall / (ls.precision + ls.recall)
                : 0.0;
    s.per_label[label] = ls;
    sum += ls.f1;
  }
  s.macro_f1 = present.empty() ? 0.0 : sum / static_cast<double>(present.size());
  return s;
}

std::string keyword_label(const std::map<std::string, uint64_t>& counts, const ExitInfo& exit) {
  std::string best;
  uint64_t best_n = 0;
  for (const auto& info : labels()) {  // taxonomy order breaks ties
    auto it = counts.find(std::string(info.label));
    if (it != counts.end() && it->second > best_n) {
      best = it->first;
      best_n = it->second;
    }
  }
  if (!best.empty()) {
    return best;
  }
  const bool zero = exit.exit_code && *exit.exit_code == 0 && !exit.signal;
  return zero ? "success" : "unknown";
}

std::string exit_status_label(const ExitInfo& exit) {
  if (exit.wrapper_timeout) {
    return "time_limit";
  }
  if (exit.exit_code && !exit.signal) {
    if (*exit.exit_code == 0) {
      return "success";
    }
    if (*exit.exit_code == 124) {
      return "time_limit";
    }
  }
  switch (effective_signal(exit)) {
    case 0:
      break;
    case 9:
      return "host_oom";
    case 11:
    case 6:
    case 4:
    case 8:
      return "native_crash";
    case 7:
      return "shm_exhausted";
    case 1:
    case 2:
    case 15:
      return "cancelled";
    case 24:
      return "time_limit";
    default:
      return "unknown";
  }
  return exit.exit_code ? "script_error" : "unknown";
}

util::Result<Evaluation> evaluate(const RuleSet& rules, const std::vector<std::string>& roots) {
  auto start = std::chrono::steady_clock::now();
  Evaluation e;
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      return util::Error{root + ": not a directory"};
    }
  }
  std::vector<std::pair<std::string, std::string>> ordered, keyword, exit_only;
  for (const auto& dir : find_cases(roots)) {
    auto facts = read_case_facts(dir);
    if (!facts) {
      e.skipped.push_back(dir + ": " + facts.error());
      continue;
    }
    if (!facts->label || !find_label(*facts->label)) {
      e.skipped.push_back(dir + ": case.json has no valid label");
      continue;
    }
    if (!facts->exit_known) {
      e.skipped.push_back(dir + ": case.json has neither exit_code nor signal");
      continue;
    }
    Scanner scanner(rules);
    // The keyword baseline: lines per label, each line counted once per label.
    std::map<std::string, uint64_t> keyword_counts;
    scanner.observe_lines([&keyword_counts](const std::vector<const Rule*>& matched) {
      std::set<std::string_view> line_labels;
      for (const Rule* rule : matched) {
        if (find_label(rule->label)) {  // markers have no label
          line_labels.insert(rule->label);
        }
      }
      for (std::string_view label : line_labels) {
        ++keyword_counts[std::string(label)];
      }
    });
    if (auto st = scan_file((fs::path(dir) / "output.log").string(), scanner); !st) {
      e.skipped.push_back(dir + ": " + st.error());
      continue;
    }
    Verdict v = scanner.verdict(facts->exit, facts->host);
    CaseResult r;
    r.path = dir;
    r.gold = *facts->label;
    r.predicted = v.label;
    r.rule = v.rule;
    r.keyword = keyword_label(keyword_counts, facts->exit);
    r.exit_status = exit_status_label(facts->exit);
    r.batch = facts->batch.value_or("");
    r.first_verdict = facts->first_verdict.value_or("");
    for (Tally* t : {&e.total, &e.by_batch[r.batch]}) {
      ++t->cases;
      t->right += r.gold == r.predicted;
      if (!r.first_verdict.empty()) {
        ++t->first_known;
        t->first_right += r.gold == r.first_verdict;
      }
    }
    ordered.emplace_back(r.gold, r.predicted);
    keyword.emplace_back(r.gold, r.keyword);
    exit_only.emplace_back(r.gold, r.exit_status);
    e.cases.push_back(std::move(r));
  }
  e.rules = score(ordered);
  e.keyword = score(keyword);
  e.exit_status = score(exit_only);
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

namespace {

nlohmann::json tally_json(const Tally& t) {
  nlohmann::json j = {{"cases", t.cases}, {"right", t.right}};
  j["first_sight"] = {
      {"cases", t.first_known}, {"right", t.first_right}, {"unknown", t.cases - t.first_known}};
  return j;
}

// Batches in numeric order when they are numbers ("2" before "10"), the unbatched last.
std::vector<std::string> batch_order(const std::map<std::string, Tally>& by_batch) {
  std::vector<std::string> names;
  for (const auto& [name, tally] : by_batch) {
    names.push_back(name);
  }
  auto key = [](const std::string& s) {
    bool numeric =
        !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    return std::make_tuple(s.empty(), !numeric, numeric ? s.size() : 0, s);
  };
  std::sort(names.begin(), names.end(),
            [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  return names;
}

std::string percent(int n, int of) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", of ? 100.0 * n / of : 0.0);
  return buf;
}

nlohmann::json scores_json(const Scores& s, bool full) {
  nlohmann::json j;
  j["macro_f1"] = s.macro_f1;
  nlohmann::json per = nlohmann::json::object();
  for (const auto& [label, ls] : s.per_label) {
    per[label] = {
        {"precision", ls.precision}, {"recall", ls.recall}, {"f1", ls.f1}, {"support", ls.support}};
  }
  j["per_label"] = per;
  if (full) {
    j["confusion"] = s.confusion;
  }
  return j;
}

}  // namespace

nlohmann::json to_json(const Evaluation& e, bool by_batch) {
  nlohmann::json j = scores_json(e.rules, true);
  j["cases"] = e.cases.size();
  j["right"] = e.total.right;
  j["first_sight"] = tally_json(e.total)["first_sight"];
  if (by_batch) {
    nlohmann::json batches = nlohmann::json::array();
    for (const auto& name : batch_order(e.by_batch)) {
      nlohmann::json b = tally_json(e.by_batch.at(name));
      b["batch"] = name.empty() ? nlohmann::json() : nlohmann::json(name);
      batches.push_back(b);
    }
    j["by_batch"] = batches;
  }
  j["baselines"] = {{"keyword", scores_json(e.keyword, false)},
                    {"exit_code", scores_json(e.exit_status, false)}};
  nlohmann::json mistakes = nlohmann::json::array();
  for (const auto& c : e.cases) {
    if (c.gold != c.predicted) {
      mistakes.push_back(
          {{"case", c.path}, {"gold", c.gold}, {"predicted", c.predicted}, {"rule", c.rule}});
    }
  }
  j["mistakes"] = mistakes;
  j["skipped"] = e.skipped;
  j["seconds"] = e.seconds;
  return j;
}

std::string to_text(const Evaluation& e, bool by_batch) {
  std::ostringstream out;
  char buf[256];
  out << "cases: " << e.cases.size();
  if (!e.skipped.empty()) {
    out << " (" << e.skipped.size() << " skipped)";
  }
  std::snprintf(buf, sizeof buf, " in %.2f s\n", e.seconds);
  out << buf;
  const Tally& t = e.total;
  if (t.first_known > 0) {
    out << "first sight: " << t.first_right << " of " << t.first_known << " right ("
        << percent(t.first_right, t.first_known) << "), the rules as they stood when each case"
        << " was added; " << t.cases - t.first_known << " cases without a first verdict\n";
  }
  out << "now:         " << t.right << " of " << t.cases << " right (" << percent(t.right, t.cases)
      << ")\n";
  if (by_batch) {
    std::snprintf(buf, sizeof buf, "\n%-10s %6s %12s %8s %8s %8s\n", "batch", "cases",
                  "first sight", "first %", "now", "now %");
    out << buf;
    for (const auto& name : batch_order(e.by_batch)) {
      const Tally& b = e.by_batch.at(name);
      std::string first = std::to_string(b.first_right) + "/" + std::to_string(b.first_known);
      std::string first_pct = b.first_known ? percent(b.first_right, b.first_known) : "-";
      std::snprintf(buf, sizeof buf, "%-10s %6d %12s %8s %8d %8s\n",
                    name.empty() ? "(none)" : name.c_str(), b.cases, first.c_str(),
                    first_pct.c_str(), b.right, percent(b.right, b.cases).c_str());
      out << buf;
    }
  }
  out << "\n";
  std::snprintf(buf, sizeof buf, "%-22s %9s %9s %9s %8s %12s %12s\n", "label", "precision",
                "recall", "f1", "support", "f1 keyword", "f1 exit");
  out << buf;
  for (const auto& [label, ls] : e.rules.per_label) {
    const std::string& name =
        label;  // structured bindings cannot be captured before C++20 in clang 14
    auto other = [&](const Scores& s) {
      auto it = s.per_label.find(name);
      return it == s.per_label.end() ? 0.0 : it->second.f1;
    };
    std::snprintf(buf, sizeof buf, "%-22s %9.3f %9.3f %9.3f %8d %12.3f %12.3f\n", label.c_str(),
                  ls.precision, ls.recall, ls.f1, ls.support, other(e.keyword),
                  other(e.exit_status));
    out << buf;
  }
  std::snprintf(
      buf, sizeof buf,
      "\nmacro-F1 over the %zu labels present:\n"
      "  ordered rules        %.3f\n"
      "  keyword baseline     %.3f   (same patterns, no order/conditions, most lines wins)\n"
      "  exit-status baseline %.3f   (0 success, SIGKILL host_oom, SIGSEGV native_crash, ...)\n",
      e.rules.per_label.size(), e.rules.macro_f1, e.keyword.macro_f1, e.exit_status.macro_f1);
  out << buf;
  out << "\nconfusion (gold: predicted=count):\n";
  for (const auto& [gold, row] : e.rules.confusion) {
    out << "  " << gold << ":";
    for (const auto& [pred, n] : row) {
      out << " " << pred << "=" << n;
    }
    out << "\n";
  }
  size_t wrong = 0;
  for (const auto& c : e.cases) {
    wrong += c.gold != c.predicted;
  }
  out << "\nmistakes: " << wrong << "\n";
  for (const auto& c : e.cases) {
    if (c.gold != c.predicted) {
      out << "  " << c.path << ": gold " << c.gold << ", predicted " << c.predicted << " ("
          << c.rule << ")\n";
    }
  }
  for (const auto& s : e.skipped) {
    out << "skipped: " << s << "\n";
  }
  return out.str();
}

}  // namespace classify
