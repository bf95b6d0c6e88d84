// classify/no_rule_table.cpp: for the rulegen tool, which makes the table.
#include "classify/default_rules.hpp"

namespace classify {

bool embedded_rule_table(std::vector<Rule>&, std::vector<std::string>&, bool) { return false; }

}  // namespace classify
