// util/count.hpp: counting line breaks fast, for the output fed to diagnosis and the scanner.
#pragma once

#include <cstdint>
#include <string_view>

namespace util {

// The number of '\n' bytes in text. Vectorised (AVX2 where the CPU has it, else
// SSE2 on x86-64, else a plain loop): ~30 GB/s on cached data whatever the line
// length, where a memchr per line slows down with short lines.
uint64_t count_newlines(std::string_view text);

}  // namespace util
