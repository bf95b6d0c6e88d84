// classify/rule_set_impl.hpp: RuleSet's private state, shared with Scanner.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "classify/classifier.hpp"
#include "classify/compiled_rules.hpp"
#include "classify/rules.hpp"

namespace classify {

struct RuleSet::Impl {
  std::vector<Rule> rules;
  std::vector<std::string> global_extract;
  // Built on first use and rebuilt after merge(): `rules list` never pays for it.
  mutable std::mutex mutex;
  mutable std::shared_ptr<const CompiledRules> compiled;

  util::Result<std::shared_ptr<const CompiledRules>> compile() const;
  // The same, moving the rules into the compiled form instead of copying them
  // (the set is left empty): for a set used once, to build a Scanner.
  util::Result<std::shared_ptr<const CompiledRules>> compile_consuming();
  // Both: builds once under the lock from what take() gives (a copy, or the rules).
  template <typename Take>
  util::Result<std::shared_ptr<const CompiledRules>> compile_with(Take take) const;
};

// The compiled form of a rule set; the error is a compile failure that
// load_*() already ruled out for tables it accepted.
util::Result<std::shared_ptr<const CompiledRules>> compiled_rules(const RuleSet& set);
util::Result<std::shared_ptr<const CompiledRules>> compiled_rules(RuleSet&& set);

}  // namespace classify
