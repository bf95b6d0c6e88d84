// Fuzzes the rules-file loader (TOML, patterns, conditions): a user's file may be
// anything, and every failure must come back as an error message, never a crash.
#include <cstdint>
#include <string>
#include <string_view>

#include "classify/classifier.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rules = classify::RuleSet::load_string(text, "fuzz.toml");
  if (!rules) {
    return 0;
  }
  (void)rules->check_references();
  classify::Scanner scanner(*rules);
  scanner.feed("CUDA out of memory\nKeyError: 'x'\n\r\x1b[31mNaN\n");
  scanner.finish();
  (void)scanner.verdict(model::ExitInfo{1, std::nullopt, false}, {});
  return 0;
}
