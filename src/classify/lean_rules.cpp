// classify/lean_rules.cpp: the embedded rules without what only people and tests read.
//
// Half of default_rules.toml is examples, counter-examples, notes and comments,
// which the classifier never uses. The lean table (those lines blanked) is what
// the build turns into C++ for `run` (rulegen_main.cpp), so that `run` never
// parses TOML for the default rules; load_default(false) gives it. The filter
// knows only the layout of our own file (one key per line, multi-line arrays
// closed by a line holding just "]"); a unit test checks that the lean table
// holds the same rules as the full one.
#include <string>

#include "classify/default_rules.hpp"
#include "util/text.hpp"

namespace classify {

namespace {

using util::trim_blanks;

bool starts_with_key(std::string_view line, std::string_view key) {
  if (line.substr(0, key.size()) != key) {
    return false;
  }
  std::string_view rest = trim_blanks(line.substr(key.size()));
  return !rest.empty() && rest.front() == '=';
}

}  // namespace

std::string strip_documentation(std::string_view toml) {
  std::string out;
  out.reserve(toml.size() / 2);
  bool in_skipped_array = false;
  while (!toml.empty()) {
    auto nl = toml.find('\n');
    std::string_view line = toml.substr(0, nl);
    toml.remove_prefix(nl == std::string_view::npos ? toml.size() : nl + 1);
    std::string_view t = trim_blanks(line);
    if (in_skipped_array) {
      in_skipped_array = t != "]";
      out += '\n';  // keep line numbers
      continue;
    }
    if (starts_with_key(t, "examples") || starts_with_key(t, "not_examples")) {
      in_skipped_array = t.back() != ']';
      out += '\n';
      continue;
    }
    if (starts_with_key(t, "note") || (!t.empty() && t.front() == '#')) {
      out += '\n';
      continue;
    }
    out.append(line);
    out += '\n';
  }
  return out;
}

std::string_view lean_default_rules_toml() {
  static const std::string lean = strip_documentation(default_rules_toml());
  return lean;
}

}  // namespace classify
