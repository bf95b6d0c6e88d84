// cli/cmd_eval.cpp: `gpualert eval`, the rules measured on labelled cases beside
// two baselines (see classify/evaluate.hpp).
#include <cstdio>
#include <string>
#include <vector>

#include "classify/evaluate.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"

namespace cli {

int cmd_eval(int argc, char** argv) {
  Options options("gpualert eval",
                  "Score the rules on corpus cases (directories holding case.json).");
  std::vector<std::string> roots, rule_files;
  bool json = false, by_batch = false, no_defaults = false;
  options.flag("--json", json, "print the scores as JSON");
  options.flag("--by-batch", by_batch,
               "also the cases, current and first-sight right answers of each batch");
  options.values("--rules", rule_files, "extra or overriding rules file (repeatable)");
  options.flag("--no-default-rules", no_defaults,
               "leave out the built-in rules: the --rules files are the whole table");
  options.positionals("DIR", roots, "corpus roots, searched at any depth").required();
  if (auto done = options.parse(argc, argv, "eval")) {
    return *done;
  }
  if (no_defaults && rule_files.empty()) {
    std::fprintf(stderr, "gpualert: error: --no-default-rules needs at least one --rules FILE\n");
    return 2;
  }
  auto rules = classify::load_rules(rule_files, !no_defaults);
  if (!rules) {
    std::fprintf(stderr, "gpualert: error: %s\n", rules.error().c_str());
    return 1;
  }
  auto result = classify::evaluate(*rules, roots);
  if (!result) {
    std::fprintf(stderr, "gpualert: error: %s\n", result.error().c_str());
    return 1;
  }
  if (result->cases.empty()) {
    std::fprintf(stderr,
                 "gpualert: error: no readable case (a directory with case.json and "
                 "output.log) under the given directories\n");
    return 1;
  }
  for (const auto& s : result->skipped) {
    std::fprintf(stderr, "gpualert: warning: skipped %s\n", s.c_str());
  }
  if (json) {
    std::string text = classify::to_json(*result, by_batch).dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::string text = classify::to_text(*result, by_batch);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

}  // namespace cli
