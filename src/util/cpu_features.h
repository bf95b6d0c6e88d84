/* util/cpu_features.h: what the CPU can do, as glibc already read it at start. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/* Nonzero when AVX2 is there and enabled by the OS. Costs no CPUID instruction on
   glibc >= 2.33 (each one traps to the hypervisor in a virtual machine). */
int gpualert_cpu_has_avx2(void);

#ifdef __cplusplus
}
#endif
