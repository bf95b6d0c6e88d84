// bench/ere_patterns.cpp: prints the classifier's patterns as GNU grep -E patterns,
// one a line, so classify_bench.sh can give grep the same work.
//
// usage: ere_patterns [RULES_FILE...]   (the default table, each file merged on top)
#include <cstdio>
#include <string>
#include <vector>

#include "classify/classifier.hpp"
#include "classify/rules.hpp"
#include "ere.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> files(argv + 1, argv + argc);
  auto rules = classify::load_rules(files);
  if (!rules) {
    std::fprintf(stderr, "ere_patterns: %s\n", rules.error().c_str());
    return 2;
  }
  int refused = 0;
  for (const auto& r : rules->rules()) {
    if (r.is_marker) {
      continue;
    }
    for (const auto& p : r.patterns) {
      if (auto translated = bench::to_gnu_ere(p, r.caseless)) {
        std::printf("%s\n", translated->c_str());
      } else {
        ++refused;
        std::fprintf(stderr, "ere_patterns: warning: %s: pattern has no ERE form: %s\n",
                     r.id.c_str(), p.c_str());
      }
    }
  }
  return refused > 0 ? 1 : 0;
}
