// classify/hs_compile_wire.hpp: what `gpualert` and gpualert-compile say to each other
// over the helper's stdin and stdout (hs_compile.hpp). Every item is a header line of
// numbers and then that many bytes, so patterns and Hyperscan's databases pass as they
// are, newlines and NULs included:
//   request:   per expression "FLAGS ID LENGTH\n" PATTERN "\n"
//   database:  "ok LENGTH\n" DATABASE, or "error EXPRESSION LENGTH\n" MESSAGE
//              (EXPRESSION is -1 when the error is about none)
//   check:     per expression "LENGTH\n" MESSAGE (LENGTH 0: it compiles)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classify/hs_compile.hpp"

namespace classify::wire {

std::string encode_request(const std::vector<HsExpression>& expressions);
std::optional<std::vector<HsExpression>> decode_request(std::string_view text);

std::string encode_compiled(const HsCompiled& compiled);
std::optional<HsCompiled> decode_compiled(std::string_view text);

std::string encode_checks(const std::vector<std::string>& messages);
std::optional<std::vector<std::string>> decode_checks(std::string_view text);

}  // namespace classify::wire
