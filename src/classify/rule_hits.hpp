// classify/rule_hits.hpp: what the scanner remembers per rule, and the decision
// taken from it. Memory per rule is bounded (a few evidence lines), whatever the
// size of the log.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "classify/classifier.hpp"
#include "classify/compiled_rules.hpp"

namespace classify {

inline constexpr size_t k_max_evidence = 3;

// Where evidence was seen, ordered: kernel lines first (the driver and the OOM
// killer report the cause before the job prints its consequences), then the log
// in line order, then facts known only at the end (exit status, host counters).
enum class Origin : uint64_t { kernel = 0, log = 1, end = 2 };
inline uint64_t position(Origin origin, uint64_t line) {
  return (static_cast<uint64_t>(origin) << 60) | line;
}
inline constexpr uint64_t k_no_position = std::numeric_limits<uint64_t>::max();

struct RuleHits {
  uint64_t count = 0;              // evidence lines (exclusions applied)
  uint64_t first = k_no_position;  // position of the first evidence line
  uint64_t last = 0;               // position of the last evidence line
  bool last_warns = false;         // the last evidence line calls itself a warning
  std::vector<EvidenceLine> evidence;
  std::map<std::string, std::string> fields;
};

// Decides the label from the hits of every rule (indexed like rules.rules()).
// log_end: the position of the last line of job output with text (k_no_position
// when there is none), for the `at_end` condition.
Verdict decide(const CompiledRules& rules, const std::vector<RuleHits>& hits, const ExitInfo& exit,
               const HostEvidence& host, uint64_t log_end = k_no_position);

// The signal an exit status stands for: the signal itself, or N for exit code 128+N
// (what a shell reports for a child killed by signal N); 0 when neither.
int effective_signal(const ExitInfo& exit);

}  // namespace classify
