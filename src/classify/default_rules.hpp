// classify/default_rules.hpp: the rule table shipped inside the binary.
//
// default_rules.toml is turned into C++ at build time (gpualert-rulegen, see
// CMakeLists.txt), so `gpualert` needs no data files and parses no TOML for it.
#pragma once

#include <string>
#include <vector>

#include "classify/rules.hpp"

namespace classify {

// Fills the default table (what load_default gives), without parsing; examples,
// counter-examples and notes only when with_documentation (`run` leaves them out).
// False in the rulegen tool, which generates it.
bool embedded_rule_table(std::vector<Rule>& rules, std::vector<std::string>& global_extract,
                         bool with_documentation);

}  // namespace classify
