/* bench/libc_startup.c: how long the C library's own start-up takes on this machine.
 *
 * Linked as a static PIE like gpualert, with an entry point that reads the clock before
 * jumping to the C library's _start; main reads it again. Prints two numbers, in
 * microseconds: entry -> main (the C library's initialisation: under a hypervisor
 * mostly its CPU-feature probing, one CPUID instruction after another), and the
 * cost of one CPUID instruction here (the mean of 200). Every program linked with the
 * C library pays the first once per start, statically linked or through ld.so:
 * bare `true`, the floor program and gpualert alike. x86-64 only. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdio.h>
#include <time.h>

struct timespec gpualert_bench_t0;

/* The kernel enters here with the stack as _start expects it; clock_gettime as a raw
 * system call (nothing of the C library is ready), then on to _start with rdx = 0
 * (no exit function from a dynamic loader). */
__attribute__((naked, used)) void gpualert_bench_entry(void) {
  __asm__ volatile(
      "mov $228, %eax\n\t" /* SYS_clock_gettime */
      "mov $1, %edi\n\t"   /* CLOCK_MONOTONIC */
      "lea gpualert_bench_t0(%rip), %rsi\n\t"
      "syscall\n\t"
      "xor %edx, %edx\n\t"
      "jmp _start\n\t");
}

static double micros(struct timespec a, struct timespec b) {
  return (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
}

int main(void) {
  struct timespec at_main;
  clock_gettime(CLOCK_MONOTONIC, &at_main);
  enum { k_rounds = 200 };
  struct timespec a, b;
  unsigned eax, ebx, ecx, edx;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < k_rounds; ++i) {
    __cpuid(0, eax, ebx, ecx, edx);
    __asm__ volatile("" : : "r"(eax), "r"(ebx), "r"(ecx), "r"(edx));
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f %.3f\n", micros(gpualert_bench_t0, at_main), micros(a, b) / k_rounds);
  return 0;
}
