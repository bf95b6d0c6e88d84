/* gpu/nvml_api.h: the part of NVML's ABI that gpualert-gpu uses, declared here so
 * that nothing at build time needs NVIDIA's headers or library (it is dlopen'ed).
 * Layouts and values as in NVIDIA's nvml.h; the test fake (tests/fake_nvml) uses
 * this header too. C, so that the fake is plain C. */
#ifndef GPUALERT_NVML_API_H
#define GPUALERT_NVML_API_H

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999
};

#define GPUALERT_NVML_XID_EVENT 0x0000000000000008ULL /* nvmlEventTypeXidCriticalError */

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

/* nvmlProcessInfo_t, as nvmlDeviceGetComputeRunningProcesses_v3 fills it. */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory; /* NVML_VALUE_NOT_AVAILABLE when unknown */
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

#define GPUALERT_NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

#endif
