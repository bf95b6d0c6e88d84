// classify/default_rules.hpp: the rule table shipped inside the binary.
//
// default_rules.toml is turned into a C++ string when the project is configured
// (see CMakeLists.txt), so `gpualert` needs no data files at run time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "classify/rules.hpp"

namespace classify {

std::string_view default_rules_toml();

// The same table without examples, notes and comments (lean_rules.cpp): what `run` parses.
std::string_view lean_default_rules_toml();
// Fills the lean table (what load_default(false) gives) from C++ generated at build
// time, without parsing; false in the rulegen tool, which generates it.
bool embedded_rule_table(std::vector<Rule>& rules, std::vector<std::string>& global_extract);

// Blanks out `examples`, `not_examples`, `note` and comment lines, keeping line numbers.
std::string strip_documentation(std::string_view toml);

}  // namespace classify
