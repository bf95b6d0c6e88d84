// bench/ere.hpp: a rule pattern rewritten as a POSIX extended regex for GNU grep.
//
// Only the benchmark needs this (bench/ere_patterns feeds `grep -E -f` the same
// patterns the classifier uses, as the baseline to beat), so gpualert does not
// carry it. The translation covers the subset the rule table uses; anything else
// is refused, not guessed.
#pragma once

#include <optional>
#include <string>

namespace bench {

// nullopt when the pattern uses a construct with no GNU ERE equivalent.
std::optional<std::string> to_gnu_ere(const std::string& pattern, bool caseless);

}  // namespace bench
