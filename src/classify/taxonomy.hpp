// classify/taxonomy.hpp: the 20 labels of spec/taxonomy.md with their group and
// the first action an operator should take.
//
// The label set is fixed by the spec (reports, eval and mail all rely on it), so
// it lives in code; rules refer to labels by name and the rule loader rejects
// names that are not here.
#pragma once

#include <string_view>
#include <vector>

namespace classify {

struct LabelInfo {
  std::string_view label;
  std::string_view group;   // "-" for success and unknown
  std::string_view action;  // first action for the operator
};

// All labels, in taxonomy order.
const std::vector<LabelInfo>& labels();
// nullptr when `label` is not one of the 20.
const LabelInfo* find_label(std::string_view label);

// Signal numbers by name ("SIGKILL", "KILL" and "9" all give 9); 0 when unknown.
int signal_number(std::string_view name);
// "SIGKILL" for 9; "SIG<n>" for numbers without a name.
std::string_view signal_name(int signal, char (&buf)[16]);

}  // namespace classify
