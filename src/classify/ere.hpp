// classify/ere.hpp: a rule pattern rewritten as a POSIX extended regex for GNU grep.
//
// Only the benchmark needs this (`gpualert rules patterns --ere` feeds `grep -E -f`
// the same patterns the classifier uses, as the baseline to beat). The translation
// covers the subset the rule table uses; anything else is refused, not guessed.
#pragma once

#include <optional>
#include <string>

namespace classify {

// nullopt when the pattern uses a construct with no GNU ERE equivalent.
std::optional<std::string> to_gnu_ere(const std::string& pattern, bool caseless);

}  // namespace classify
