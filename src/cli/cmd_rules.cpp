// cli/cmd_rules.cpp: `gpualert rules list | check FILE...`.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "classify/classifier.hpp"
#include "classify/rules.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"

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
    std::string text = out.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
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
  constexpr const char* k_list_summary = "list the rules in priority order (id, label, tier)";
  constexpr const char* k_check_summary = "check rules files; errors as FILE:LINE: message";
  Options options("gpualert rules", "The classification rules: list them, or check a rules file.");
  options.subcommand("list", k_list_summary);
  options.subcommand("check", k_check_summary);
  std::string_view sub = argc >= 2 ? argv[1] : "";
  if (sub == "list") {
    Options list("gpualert rules list", k_list_summary);
    std::vector<std::string> rule_files;
    bool json = false;
    list.values("--rules", rule_files, "extra or overriding rules file (repeatable)");
    list.flag("--json", json, "print as JSON");
    if (auto done = list.parse(argc - 1, argv + 1, "rules list")) {
      return *done;
    }
    auto rules = classify::load_rules(rule_files);
    if (!rules) {
      std::fprintf(stderr, "gpualert: error: %s\n", rules.error().c_str());
      return 1;
    }
    return list_rules(*rules, json);
  }
  if (sub == "check") {
    Options check("gpualert rules check", k_check_summary);
    std::vector<std::string> targets;
    check.positionals("FILE", targets, "rules file (TOML)").required();
    if (auto done = check.parse(argc - 1, argv + 1, "rules check")) {
      return *done;
    }
    return check_files(targets);
  }
  if (argc < 2) {  // no subcommand: a usage error that shows which there are
    std::fputs(options.help().c_str(), stderr);
    return 2;
  }
  // --help, or a usage error (an unknown option; any word is not a subcommand).
  std::vector<std::string> words;
  options.positionals("SUBCOMMAND", words, "").hidden();
  if (auto done = options.parse(argc, argv, "rules")) {
    return *done;
  }
  std::string why = words.empty() ? std::string("a subcommand is required")
                                  : "unknown subcommand '" + words.front() + "'";
  std::fprintf(stderr, "gpualert: error: rules: %s (list or check; see gpualert rules --help)\n",
               why.c_str());
  return 2;
}

}  // namespace cli
