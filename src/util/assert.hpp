// util/assert.hpp: an always-on assertion for invariants that guard the exit-status path.
// Unlike assert(), it stays in Release builds: a broken invariant there would make
// gpualert lie about how the job ended, which is worse than stopping loudly.
#pragma once

#include <cstdio>
#include <cstdlib>

#define GPUALERT_ASSERT(cond)                                                                    \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "gpualert: internal error: %s:%d: assertion '%s' failed\n", __FILE__, \
                   __LINE__, #cond);                                                             \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)
