/* util/cpu_features.c: in C, because <sys/platform/x86.h> is a C header (clang's C++
   mode rejects its _Bool). glibc fills its record of the CPU at start (the dynamic
   loader, or the start-up code of a static binary such as gpualert); asking it is
   free, while __builtin_cpu_supports links libgcc's start-up probe, a dozen CPUID
   instructions, each a trap to the hypervisor (~5 us) in a virtual machine. */
#include "util/cpu_features.h"

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h> /* glibc >= 2.33 */
#endif
#endif

int gpualert_cpu_has_avx2(void) {
#if defined(CPU_FEATURE_ACTIVE)
  return CPU_FEATURE_ACTIVE(AVX2);
#elif defined(__x86_64__)
  return __builtin_cpu_supports("avx2");
#else
  return 0;
#endif
}
