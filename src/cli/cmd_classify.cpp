// cli/cmd_classify.cpp: `gpualert classify`, the classifier on a log offline.
//
// Exit facts come from the flags, else from case.json/report.json beside the log;
// kernel lines from --kernel-log, else kernel.log beside the log.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "classify/case_dir.hpp"
#include "classify/classifier.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"

namespace cli {

namespace {

namespace fs = std::filesystem;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "gpualert: error: %s\n", message.c_str());
  return 2;
}

int runtime_error(const std::string& message) {
  std::fprintf(stderr, "gpualert: error: %s\n", message.c_str());
  return 1;
}

nlohmann::json verdict_json(const model::Verdict& v) {
  nlohmann::json evidence = nlohmann::json::array();
  for (const auto& e : v.evidence) {
    evidence.push_back({{"line", e.line}, {"text", e.text}, {"source", e.source}});
  }
  return {{"label", v.label},          {"rule", v.rule},     {"group", v.group},
          {"evidence", evidence},      {"action", v.action}, {"fields", v.fields},
          {"confidence", v.confidence}};
}

void print_verdict(const model::Verdict& v) {
  std::printf("label:    %s (%s)\n", v.label.c_str(), v.group.c_str());
  std::printf("rule:     %s\n", v.rule.c_str());
  std::printf("sure:     %s\n", v.confidence.c_str());
  std::printf("evidence:\n");
  for (const auto& e : v.evidence) {
    if (e.source == "log") {
      std::printf("  %llu: %s\n", static_cast<unsigned long long>(e.line), e.text.c_str());
    } else if (e.line > 0) {
      std::printf("  %s %llu: %s\n", e.source.c_str(), static_cast<unsigned long long>(e.line),
                  e.text.c_str());
    } else {
      std::printf("  %s: %s\n", e.source.c_str(), e.text.c_str());
    }
  }
  if (!v.fields.empty()) {
    std::printf("fields:  ");
    for (const auto& [k, val] : v.fields) {
      std::printf(" %s=%s", k.c_str(), val.c_str());
    }
    std::printf("\n");
  }
  std::printf("action:   %s\n", v.action.c_str());
}

}  // namespace

int cmd_classify(int argc, char** argv) {
  Options options("gpualert classify", "Diagnose why a job ended, from its log (and exit status).");
  std::string log_path, kernel_log, signal_name;
  int exit_code = 0;
  bool json = false, wrapper_timeout = false;
  std::vector<std::string> rule_files;
  auto& exit_opt = options.value("--exit-code", exit_code, "the job's exit code");
  auto& signal_opt =
      options.value("--signal", signal_name, "the signal that killed the job (SIGKILL, 9, ...)");
  options.value("--kernel-log", kernel_log, "kernel messages seen during the run (dmesg lines)");
  options.flag("--wrapper-timeout", wrapper_timeout, "gpualert's --timeout stopped the job");
  options.flag("--json", json, "print the verdict as JSON");
  options.values("--rules", rule_files, "extra or overriding rules file (repeatable)");
  options.positional("LOGFILE", log_path, "the job's output (output.log)").required();
  if (auto done = options.parse(argc, argv, "classify")) {
    return *done;
  }
  if (exit_opt && signal_opt) {
    return usage_error("classify: --exit-code excludes --signal");
  }

  model::ExitInfo exit;
  model::HostEvidence host;
  const fs::path dir =
      fs::path(log_path).parent_path().empty() ? fs::path(".") : fs::path(log_path).parent_path();
  auto facts = classify::read_case_facts(dir.string());
  if (!facts) {
    return runtime_error(facts.error());
  }
  if (exit_opt) {
    exit.exit_code = exit_code;
  } else if (signal_opt) {
    int sig = classify::parse_signal(signal_name);
    if (sig <= 0) {
      return usage_error("--signal: unknown signal '" + signal_name + "'");
    }
    exit.signal = sig;
  } else if (facts->exit_known) {
    exit = facts->exit;
  }
  exit.wrapper_timeout |= wrapper_timeout || facts->exit.wrapper_timeout;
  host = facts->host;
  if (!kernel_log.empty()) {  // replaces the kernel.log beside the log, if any
    host.kernel_lines.clear();
    if (auto st = classify::read_kernel_log(kernel_log, host); !st) {
      return runtime_error(st.error());
    }
    host.kernel_log_read = true;
  }

  auto rules = classify::load_rules(rule_files);
  if (!rules) {
    return runtime_error(rules.error());
  }
  classify::Scanner scanner(*rules);
  if (auto st = classify::scan_file(log_path, scanner); !st) {
    return runtime_error(st.error());
  }
  model::Verdict v = scanner.verdict(exit, host);
  if (json) {
    std::string text = verdict_json(v).dump(2);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputs("\n", stdout);
  } else {
    print_verdict(v);
  }
  return 0;
}

}  // namespace cli
