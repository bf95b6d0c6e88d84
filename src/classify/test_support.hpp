// classify/test_support.hpp: helpers shared by the classifier's unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "classify/classifier.hpp"
#include "classify/rules.hpp"

namespace classify::testing {

inline const RuleSet& default_rules() {
  static RuleSet rules = [] {
    auto r = RuleSet::load_default();
    if (!r) {
      ADD_FAILURE() << r.error();
      return RuleSet();
    }
    return std::move(*r);
  }();
  return rules;
}

inline ExitInfo exit_code(int code) {
  ExitInfo e;
  e.exit_code = code;
  return e;
}

inline ExitInfo killed_by(int signal) {
  ExitInfo e;
  e.signal = signal;
  return e;
}

inline Verdict classify_text(std::string_view log, const ExitInfo& exit,
                             const HostEvidence& host = {},
                             const RuleSet& rules = default_rules()) {
  Scanner scanner(rules);
  scanner.feed(log);
  scanner.finish();
  return scanner.verdict(exit, host);
}

}  // namespace classify::testing
