// cli/cmd_eval.cpp: `gpualert eval`, the rules measured on labelled cases beside
// two baselines (see classify/evaluate.hpp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "classify/evaluate.hpp"
#include "cli/commands.hpp"
#include "cli/parse_args.hpp"

namespace cli {

int cmd_eval(int argc, char** argv) {
  CLI::App app{"Score the rules on corpus cases (directories holding case.json).", "gpualert eval"};
  std::vector<std::string> roots, rule_files;
  bool json = false, by_batch = false, no_defaults = false;
  app.add_flag("--json", json, "print the scores as JSON");
  app.add_flag("--by-batch", by_batch,
               "also the cases, current and first-sight right answers of each batch");
  app.add_option("--rules", rule_files, "extra or overriding rules file (repeatable)")
      ->allow_extra_args(false);
  app.add_flag("--no-default-rules", no_defaults,
               "leave out the built-in rules: the --rules files are the whole table");
  app.add_option("DIR", roots, "corpus roots, searched at any depth")->required();
  if (auto done = parse_args(app, argc, argv, "eval")) {
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
    std::cout << classify::to_json(*result, by_batch).dump(2) << "\n";
  } else {
    std::cout << classify::to_text(*result, by_batch);
  }
  return 0;
}

}  // namespace cli
