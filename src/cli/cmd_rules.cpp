// cli/cmd_rules.cpp: `gpualert rules list | check FILE...`.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "classify/classifier.hpp"
#include "classify/rules.hpp"
#include "cli/commands.hpp"
#include "cli/parse_args.hpp"

namespace cli {

namespace {

int list_rules(const classify::RuleSet& rules, bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    int order = 0;
    for (const auto& r : rules.rules()) {
      out.push_back(
          {{"order", ++order},
           {"id", r.id},
           {"label", r.is_marker ? nlohmann::json(nullptr) : nlohmann::json(r.label)},
           {"tier", r.is_marker ? nlohmann::json(nullptr)
                                : nlohmann::json(std::string(classify::tier_name(r.tier)))},
           {"patterns", r.patterns.size()},
           {"origin", r.origin}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%5s  %-34s %-22s %s\n", "order", "id", "label", "tier");
  int order = 0;
  for (const auto& r : rules.rules()) {
    std::printf("%5d  %-34s %-22s %s\n", ++order, r.id.c_str(),
                r.is_marker ? "(marker)" : r.label.c_str(),
                r.is_marker ? "-" : std::string(classify::tier_name(r.tier)).c_str());
  }
  return 0;
}

int check_files(const std::vector<std::string>& files) {
  int status = 0;
  for (const auto& file : files) {
    auto rules = classify::RuleSet::load_file(file);
    if (!rules) {
      std::fprintf(stderr, "%s\n", rules.error().c_str());
      status = 1;
      continue;
    }
    // References may name rules of the default table, so check them merged.
    auto merged = classify::load_rules({file});
    if (!merged) {
      std::fprintf(stderr, "%s\n", merged.error().c_str());
      status = 1;
      continue;
    }
    std::printf("%s: %zu rules OK\n", file.c_str(), rules->rules().size());
  }
  return status;
}

}  // namespace

int cmd_rules(int argc, char** argv) {
  CLI::App app{"The classification rules: list them, or check a rules file.", "gpualert rules"};
  app.require_subcommand(1);
  std::vector<std::string> rule_files, check_targets;
  bool json = false;
  auto* list = app.add_subcommand("list", "list the rules in priority order (id, label, tier)");
  list->add_option("--rules", rule_files, "extra or overriding rules file (repeatable)")
      ->allow_extra_args(false);
  list->add_flag("--json", json, "print as JSON");
  auto* check = app.add_subcommand("check", "check rules files; errors as FILE:LINE: message");
  check->add_option("FILE", check_targets, "rules file (TOML)")->required();
  if (argc < 2) {  // no subcommand: a usage error that shows which there are
    use_help_formatter(app);
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  if (auto done = parse_args(app, argc, argv, "rules")) {
    return *done;
  }
  if (*check) {
    return check_files(check_targets);
  }
  auto rules = classify::load_rules(rule_files);
  if (!rules) {
    std::fprintf(stderr, "gpualert: error: %s\n", rules.error().c_str());
    return 1;
  }
  return list_rules(*rules, json);
}

}  // namespace cli
