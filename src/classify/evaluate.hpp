// classify/evaluate.hpp: measuring a rule set on labelled cases (`gpualert eval`).
//
// Every case is classified three ways on the same inputs: the ordered rules, an
// unordered keyword baseline (the same patterns, no order, no conditions: the label
// with the most matching lines wins), and an exit-status baseline. Scores are
// per-label precision/recall/F1 and their macro average over the labels present
// (in the gold labels or the predictions, so a wrongly predicted label costs too).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "classify/classifier.hpp"
#include "util/result.hpp"

namespace classify {

struct CaseResult {
  std::string path;
  std::string gold;
  std::string predicted;      // ordered rules
  std::string rule;           // the rule that decided
  std::string keyword;        // keyword baseline
  std::string exit_status;    // exit-status baseline
  std::string batch;          // case.json's batch, "" when none
  std::string first_verdict;  // the label given when the case was added, "" when unknown
};

// Right out of cases: the current verdicts and, over the cases that record one, the
// verdicts given when each case was first seen (before any rule change for it).
struct Tally {
  int cases = 0, right = 0;
  int first_known = 0, first_right = 0;
};

struct LabelScore {
  double precision = 0, recall = 0, f1 = 0;
  int support = 0;  // gold cases with this label
};

struct Scores {
  std::map<std::string, LabelScore> per_label;
  std::map<std::string, std::map<std::string, int>> confusion;  // gold -> predicted -> n
  double macro_f1 = 0;
};

struct Evaluation {
  std::vector<CaseResult> cases;
  std::vector<std::string> skipped;  // "path: why" for case dirs that could not be read
  Scores rules, keyword, exit_status;
  Tally total;
  std::map<std::string, Tally> by_batch;  // cases with a batch; "" holds the rest
  double seconds = 0;
};

// Case directories (holding case.json) under each root, at any depth, sorted.
std::vector<std::string> find_cases(const std::vector<std::string>& roots);

Scores score(const std::vector<std::pair<std::string, std::string>>& gold_predicted);

// The keyword baseline's choice from per-label matching line counts.
std::string keyword_label(const std::map<std::string, uint64_t>& counts, const ExitInfo& exit);
// The exit-status baseline.
std::string exit_status_label(const ExitInfo& exit);

util::Result<Evaluation> evaluate(const RuleSet& rules, const std::vector<std::string>& roots);

// `by_batch` adds the tallies of each batch.
nlohmann::json to_json(const Evaluation& e, bool by_batch = false);
std::string to_text(const Evaluation& e, bool by_batch = false);

}  // namespace classify
