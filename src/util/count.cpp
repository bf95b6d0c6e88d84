#include "util/count.hpp"

#include <cstddef>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "util/cpu_features.h"

namespace util {

namespace {

uint64_t count_plain(const char* p, size_t n) {
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    total += p[i] == '\n' ? 1 : 0;
  }
  return total;
}

#if defined(__x86_64__)
// Per-byte counters in a vector (a compare yields -1 per match, subtracted),
// summed with SAD before they can overflow: at most 255 rounds at a time.
uint64_t count_sse2(const char* p, size_t n) {
  const __m128i nl = _mm_set1_epi8('\n');
  uint64_t total = 0;
  size_t i = 0;
  while (n - i >= 16) {
    __m128i acc = _mm_setzero_si128();
    size_t rounds = (n - i) / 16;
    rounds = rounds > 255 ? 255 : rounds;
    for (size_t r = 0; r < rounds; ++r, i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, nl));
    }
    __m128i s = _mm_sad_epu8(acc, _mm_setzero_si128());
    total += static_cast<uint64_t>(_mm_cvtsi128_si64(s)) +
             static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s)));
  }
  return total + count_plain(p + i, n - i);
}

__attribute__((target("avx2"))) uint64_t count_avx2(const char* p, size_t n) {
  const __m256i nl = _mm256_set1_epi8('\n');
  uint64_t total = 0;
  size_t i = 0;
  while (n - i >= 32) {
    __m256i acc = _mm256_setzero_si256();
    size_t rounds = (n - i) / 32;
    rounds = rounds > 255 ? 255 : rounds;
    for (size_t r = 0; r < rounds; ++r, i += 32) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v, nl));
    }
    __m256i s = _mm256_sad_epu8(acc, _mm256_setzero_si256());
    total += static_cast<uint64_t>(_mm256_extract_epi64(s, 0)) +
             static_cast<uint64_t>(_mm256_extract_epi64(s, 1)) +
             static_cast<uint64_t>(_mm256_extract_epi64(s, 2)) +
             static_cast<uint64_t>(_mm256_extract_epi64(s, 3));
  }
  return total + count_sse2(p + i, n - i);
}

const bool k_have_avx2 = gpualert_cpu_has_avx2() != 0;
#endif

}  // namespace

uint64_t count_newlines(std::string_view text) {
#if defined(__x86_64__)
  return k_have_avx2 ? count_avx2(text.data(), text.size()) : count_sse2(text.data(), text.size());
#else
  return count_plain(text.data(), text.size());
#endif
}

}  // namespace util
