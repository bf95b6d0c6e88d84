// classify/rules.hpp: one rule of the ordered rule table, as loaded from TOML.
//
// The table is data (default_rules.toml, embedded in the binary, plus optional
// user/site files). A rule names a label and the evidence for it: line patterns
// (Hyperscan first pass, so they must use the syntax common to Hyperscan and RE2),
// conditions on the exit status and host facts, fields to extract (RE2 named
// groups), and the action shown to the operator. Markers are rules without a
// label: they record facts that other rules' conditions refer to ("training had
// progressed", "an OOM was caught and retried").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace classify {

// Priority classes. The verdict takes the matching rule of the lowest tier; within
// a tier the earliest evidence wins, and file order breaks ties on the same line.
//   decisive: hardware evidence and host facts that settle the question
//   cause:    root causes (OOM, illegal access, disk full, time limit banner, ...)
//   symptom:  cascade messages and the job's own exceptions (timeouts, peers gone)
//   weak:     the exit status alone (SIGSEGV -> native_crash), messages that only
//             say that something failed elsewhere
//   fallback: generic error lines, only to tell script_error from unknown
enum class Tier { decisive = 0, cause = 1, symptom = 2, weak = 3, fallback = 4 };

enum class Source { any, log, kernel };

std::string_view tier_name(Tier tier);
std::optional<Tier> parse_tier(std::string_view name);

struct Rule {
  std::string id;
  std::string label;  // empty for a marker
  bool is_marker = false;
  Tier tier = Tier::cause;
  Source source = Source::any;
  bool caseless = false;
  bool on_success = false;  // may override exit status 0
  bool yields = false;  // a generic rule: a line that a specific rule explains is not its evidence
  // A marker only: when it holds and the job exited 0, the job failed all the same
  // (a launcher or script that did not pass the failure on): the rules decide as for
  // a failed job, and the verdict's evidence says why the status was not believed.
  bool fails_zero_exit = false;
  // Markers: a short phrase a person must hear even when the job succeeded
  // ("NaN/Inf losses were logged"): the verdict stays success, with this caveat.
  std::string caveat;

  std::vector<std::string> patterns;  // any one matching a line is evidence
  std::vector<std::string> exclude;   // a line matching one of these is not evidence
  std::vector<std::string> extract;   // RE2 with named groups -> Verdict::fields

  // Conditions; all given ones must hold.
  std::vector<int> signals;         // killed by one of these (or exit code 128+N)
  std::vector<int> exit_codes;      // exited with one of these
  bool cgroup_oom = false;          // the job's memory cgroup saw an oom_kill
  bool wrapper_timeout = false;     // gpualert's --timeout stopped the job
  bool stalled = false;             // gpualert's --stall-action kill stopped the job
  bool host_unread = false;         // neither kernel log nor memory cgroup could be read
  bool host_read = false;           // the kernel log or the memory cgroup could be read
  bool at_end = false;              // the last evidence line is the last line of the job's output
  std::vector<std::string> needs;   // at least one of these rules/markers matched
  std::vector<std::string> unless;  // none of these matched
  std::vector<std::string> after;   // each matched before this rule's last evidence
  std::vector<std::string> cleared_by;  // void if one of these matched after our last evidence
  std::vector<std::string> not_after;   // void if one of these matched before our first evidence

  std::string action;  // empty: the taxonomy's first action for the label
  std::string note;
  std::vector<std::string> examples;      // lines the patterns must match
  std::vector<std::string> not_examples;  // lines that must not be evidence for this rule

  std::string origin;  // "FILE:LINE" of the rule's table, for messages

  bool operator==(const Rule&) const = default;
};

// A rule whose evidence, when it is the last line of the job's output, makes an exit
// status of 0 not believed (decide.cpp); the scanner notes for these alone whether
// that line calls itself a warning.
inline bool can_end_on_cause(const Rule& r) {
  return !r.is_marker && r.tier == Tier::cause && !r.patterns.empty();
}

}  // namespace classify
