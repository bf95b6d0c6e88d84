// classify/default_rules.hpp: the rule table shipped inside the binary.
//
// default_rules.toml is turned into a C++ string when the project is configured
// (see CMakeLists.txt), so `gpualert` needs no data files at run time.
#pragma once

#include <string_view>

namespace classify {

std::string_view default_rules_toml();

}  // namespace classify
