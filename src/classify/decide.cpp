// classify/decide.cpp: from per-rule evidence and the exit status to one label.
//
// Among the rules whose evidence and conditions hold, the verdict takes the one
// of the lowest tier; within a tier the earliest evidence (the first failure in
// the log is the root cause, what follows is cascade), and on the same line the
// rule listed first. No rule: exit 0 is success, anything else unknown.
#include <algorithm>
#include <tuple>

#include "classify/rule_hits.hpp"
#include "classify/taxonomy.hpp"

namespace classify {

int effective_signal(const ExitInfo& exit) {
  if (exit.signal) {
    return *exit.signal;
  }
  if (exit.exit_code && *exit.exit_code > 128 && *exit.exit_code <= 128 + 64) {
    return *exit.exit_code - 128;
  }
  return 0;
}

namespace {

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool matched(const std::vector<RuleHits>& hits, int index) {
  return index >= 0 && hits[static_cast<size_t>(index)].count > 0;
}

std::string exit_text(const ExitInfo& exit) {
  if (exit.signal) {
    char buf[16];
    return "killed by " + std::string(signal_name(*exit.signal, buf));
  }
  if (exit.exit_code) {
    return "exit status " + std::to_string(*exit.exit_code);
  }
  return "exit status not known";
}

// Evidence for a rule that decided on facts rather than log lines.
std::vector<EvidenceLine> fact_evidence(const Rule& rule, const ExitInfo& exit,
                                        const HostEvidence& host) {
  std::vector<EvidenceLine> out;
  if (rule.wrapper_timeout) {
    out.push_back({0, "gpualert --timeout expired and stopped the job", "wrapper"});
  }
  if (rule.stalled) {
    out.push_back({0,
                   "the job stalled: no output for the --stall time, and gpualert "
                   "--stall-action kill stopped it",
                   "wrapper"});
  }
  if (rule.host_unread) {
    out.push_back({0,
                   "neither the kernel log nor the memory cgroup's oom_kill counter could be read",
                   "host"});
  }
  if (rule.cgroup_oom && host.cgroup_oom_kills) {
    out.push_back({0,
                   "memory cgroup of the job: " + std::to_string(*host.cgroup_oom_kills) +
                       " oom_kill event(s) during the run",
                   "cgroup"});
  }
  out.push_back({0, exit_text(exit), "exit"});
  return out;
}

// How sure a verdict is, from what decided it: the host's or the scheduler's own
// records and root causes in the log are certain; a symptom, or an exit status alone,
// is likely; a generic error line or no rule at all is a guess.
std::string confidence_of(const Rule* rule, const Verdict& v, const ExitInfo& exit) {
  auto line_of = [](const EvidenceLine& e) {
    return e.line > 0 ? " (line " + std::to_string(e.line) + ")" : std::string();
  };
  if (rule == nullptr) {
    return v.label == "success"
               ? "certain: exit 0, and nothing in the log contradicts it"
               : "guess: no rule matched; only the " + exit_text(exit) +
                     " is known (the log's first error-looking line, if any, is shown)";
  }
  const EvidenceLine* first = nullptr;
  for (const auto& e : v.evidence) {
    if (e.source != "exit") {
      first = &e;
      break;
    }
  }
  if (rule->patterns.empty()) {
    if (rule->wrapper_timeout) {
      return "certain: gpualert's --timeout stopped the job";
    }
    if (rule->stalled) {
      // That it hung is certain; what it waited for is read from the log.
      return v.label == "unknown"
                 ? "guess: the job stalled (no output for --stall); the log does not show what "
                   "it waited for"
                 : "likely: the job stalled (no output for --stall) after setting up collective "
                   "communication";
    }
    if (rule->cgroup_oom) {
      return "certain: the job's own memory cgroup counted an OOM kill";
    }
    if (rule->host_unread) {
      return "likely: " + exit_text(exit) +
             " with no host source readable (kernel log, memory cgroup)";
    }
    return "likely: from the " + exit_text(exit) + " alone";
  }
  if (first != nullptr && first->source == "kernel") {
    return "certain: a kernel record about this job";
  }
  if (first != nullptr && first->source == "scheduler") {
    return "certain: the scheduler's own word";
  }
  const std::string where = first != nullptr ? line_of(*first) : "";
  switch (rule->tier) {
    case Tier::decisive:
    case Tier::cause:
      return "certain: the log shows the root cause" + where;
    case Tier::symptom:
      return "likely: a symptom in the log" + where + ", with no root cause before it";
    case Tier::weak:
      return "likely: a weak sign in the log" + where;
    case Tier::fallback:
      return "guess: only a generic error line matched" + where;
  }
  return "";
}

// The verdict's evidence says why an exit status of 0 was not believed.
void contradicted(Verdict& v, const std::string* why) {
  if (why != nullptr) {
    v.evidence.insert(v.evidence.begin(),
                      EvidenceLine{0, "exit status 0, not believed: " + *why, "exit"});
  }
}

const std::string k_ends_on_cause =
    "the last line of the job's output is a fatal error (a script or logger caught it and "
    "exited 0)";

}  // namespace

Verdict decide(const CompiledRules& compiled, const std::vector<RuleHits>& hits,
               const ExitInfo& exit, const HostEvidence& host, uint64_t log_end) {
  const auto& rules = compiled.rules();
  bool exited_zero = exit.exit_code && *exit.exit_code == 0 && !exit.signal;
  const int signal = effective_signal(exit);
  const bool cgroup_oom = host.cgroup_oom_kills && *host.cgroup_oom_kills > 0;
  const bool host_unread = !host.kernel_log_read && !host.cgroup_oom_kills;

  // The conditions of rule i that do not depend on whether exit 0 is believed.
  auto holds = [&](size_t i) {
    const Rule& rule = rules[i];
    const RuleHits& h = hits[i];
    const bool facts_only = rule.patterns.empty();
    if (!facts_only && h.count == 0) {
      return false;
    }
    if (!rule.signals.empty() && !contains(rule.signals, signal)) {
      return false;
    }
    if (!rule.exit_codes.empty() &&
        !(exit.exit_code && !exit.signal && contains(rule.exit_codes, *exit.exit_code))) {
      return false;
    }
    if ((rule.cgroup_oom && !cgroup_oom) || (rule.wrapper_timeout && !exit.wrapper_timeout) ||
        (rule.stalled && !exit.stalled) || (rule.host_unread && !host_unread) ||
        (rule.host_read && host_unread)) {
      return false;
    }
    if (rule.at_end && (facts_only || h.last != log_end)) {
      return false;
    }
    const auto& refs = compiled.refs(static_cast<uint32_t>(i));
    if (!refs.needs.empty() && std::none_of(refs.needs.begin(), refs.needs.end(),
                                            [&](int r) { return matched(hits, r); })) {
      return false;
    }
    if (std::any_of(refs.unless.begin(), refs.unless.end(),
                    [&](int r) { return matched(hits, r); })) {
      return false;
    }
    const uint64_t last = facts_only ? position(Origin::end, 0) : h.last;
    if (!std::all_of(refs.after.begin(), refs.after.end(), [&](int r) {
          return matched(hits, r) && hits[static_cast<size_t>(r)].first < last;
        })) {
      return false;
    }
    // A consequence of what came before it (a launcher stopping the other processes
    // after one failed): the earlier failure decides.
    const uint64_t first = facts_only ? position(Origin::end, 0) : h.first;
    if (std::any_of(refs.not_after.begin(), refs.not_after.end(), [&](int r) {
          return matched(hits, r) && hits[static_cast<size_t>(r)].first < first;
        })) {
      return false;
    }
    return std::none_of(refs.cleared_by.begin(), refs.cleared_by.end(), [&](int r) {
      return matched(hits, r) && hits[static_cast<size_t>(r)].last > last;
    });
  };

  // Exit 0 that the log contradicts (a launcher that did not pass a failure on, a
  // script whose handler logged the error and returned): the rules decide as for a
  // failed job. Either a marker says so, or the last line of the job's output is the
  // evidence of a cause-tier rule: a run does not succeed by printing its fatal error
  // last (unless that line calls itself a warning, as PyTorch's "CUDA initialization:
  // Found no NVIDIA driver" UserWarning in a CPU run does). (A log classified on its
  // own may be a copy cut short; `run` has the end.)
  const std::string* zero_contradicted = nullptr;
  if (exited_zero) {
    for (size_t i = 0; i < rules.size() && !zero_contradicted; ++i) {
      if (rules[i].is_marker && rules[i].fails_zero_exit && holds(i)) {
        zero_contradicted = &rules[i].note;
      }
    }
    for (size_t i = 0; i < rules.size() && !zero_contradicted; ++i) {
      if (can_end_on_cause(rules[i]) && log_end != k_no_position && hits[i].count > 0 &&
          hits[i].last == log_end && !hits[i].last_warns && holds(i)) {
        zero_contradicted = &k_ends_on_cause;
      }
    }
    exited_zero = zero_contradicted == nullptr;
  }

  int best = -1;
  std::tuple<int, uint64_t, size_t> best_key{0, 0, 0};
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& rule = rules[i];
    if (rule.is_marker || (exited_zero && !rule.on_success) || !holds(i)) {
      continue;
    }
    const bool facts_only = rule.patterns.empty();
    const uint64_t pos = facts_only ? position(Origin::end, 0) : hits[i].first;
    std::tuple<int, uint64_t, size_t> key{static_cast<int>(rule.tier), pos, i};
    if (best < 0 || key < best_key) {
      best = static_cast<int>(i);
      best_key = key;
    }
  }

  // An unknown ending still points at a line: the first that reads like an error.
  auto first_error_looking = [&](Verdict& v) {
    if (v.label != "unknown") {
      return;
    }
    for (size_t i = 0; i < rules.size(); ++i) {
      if (rules[i].is_marker && rules[i].id == "error-looking-line") {
        for (const auto& e : hits[i].evidence) {
          if (e.source == "log") {
            v.evidence.push_back(e);
            v.fields["first_error_line"] = std::to_string(e.line);
            return;
          }
        }
      }
    }
  };

  Verdict v;
  if (best < 0) {
    v.label = exited_zero ? "success" : "unknown";
    v.rule = exited_zero ? "success" : "exit-status";
    const LabelInfo* info = find_label(v.label);
    v.group = std::string(info->group);
    v.action = std::string(info->action);
    v.evidence.push_back({0, exit_text(exit), "exit"});
    v.confidence = confidence_of(nullptr, v, exit);
    first_error_looking(v);
    if (v.label == "success") {
      for (size_t i = 0; i < rules.size(); ++i) {
        if (rules[i].is_marker && !rules[i].caveat.empty() && hits[i].count > 0 && holds(i)) {
          const auto& ev = hits[i].evidence;
          v.caveats.push_back(rules[i].caveat +
                              (!ev.empty() && ev.front().line > 0
                                   ? " (line " + std::to_string(ev.front().line) + ")"
                                   : std::string()));
          if (!ev.empty()) {
            v.evidence.push_back(ev.front());
          }
        }
      }
    }
    contradicted(v, zero_contradicted);
    return v;
  }
  const Rule& rule = rules[static_cast<size_t>(best)];
  const RuleHits& h = hits[static_cast<size_t>(best)];
  const LabelInfo* info = find_label(rule.label);
  v.label = rule.label;
  v.rule = rule.id;
  v.group = info ? std::string(info->group) : "-";
  v.action = !rule.action.empty() ? rule.action : info ? std::string(info->action) : "";
  v.evidence = rule.patterns.empty() ? fact_evidence(rule, exit, host) : h.evidence;
  v.fields = h.fields;
  for (const auto& lazy : compiled.global_extractors()) {
    const RE2* re = lazy->get();
    if (!re) {
      continue;
    }
    for (const auto& e : v.evidence) {
      const int n = re->NumberOfCapturingGroups();
      std::vector<re2::StringPiece> groups(static_cast<size_t>(n) + 1);
      if (!re->Match(e.text, 0, e.text.size(), RE2::UNANCHORED, groups.data(), n + 1)) {
        continue;
      }
      for (const auto& [name, index] : re->NamedCapturingGroups()) {
        const auto& g = groups[static_cast<size_t>(index)];
        if (g.data() != nullptr && !g.empty() && !v.fields.count(name)) {
          v.fields[name] = std::string(g.data(), g.size());
        }
      }
    }
  }
  v.confidence = confidence_of(&rule, v, exit);
  first_error_looking(v);
  contradicted(v, zero_contradicted);
  return v;
}

}  // namespace classify
