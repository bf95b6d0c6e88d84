#include <stdio.h>
int cudaGetDeviceCount(int *n);
int main(void) { int n = -1; cudaGetDeviceCount(&n); printf("devices: %d\n", n); return n > 0 ? 0 : 1; }
