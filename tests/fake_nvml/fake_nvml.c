/* A stand-in libnvidia-ml.so.1 for tests: the NVML functions gpualert-gpu uses,
 * answering from a script named by GPUALERT_FAKE_NVML_SCRIPT. One statement a line
 * ('#' starts a comment), words separated by blanks, values may be "quoted":
 *
 *   init CODE                 nvmlInit_v2 returns CODE (e.g. 9, driver not loaded)
 *   driver VERSION            nvmlSystemGetDriverVersion
 *   cuda N                    nvmlSystemGetCudaDriverVersion_v2 (12040 = 12.4)
 *   gpu I name=.. uuid=.. serial=.. pci=.. memory=BYTES ecc=0|1 mig=0|1 events=CODE
 *                             a device at NVML index I (events: what registering returns)
 *        procs=PATH           its compute processes: PATH's "PID BYTES" lines, read at
 *                             each query (a test's job writes its own pid there)
 *   at SECONDS gpu I used=BYTES util=% memutil=% temp=C power=MILLIWATTS throttle=N
 *                    ecc_corr=N ecc_unc=N error=CODE
 *                             from SECONDS after nvmlInit on, these readings; error=CODE
 *                             makes every query of that GPU fail with CODE (15: lost)
 *   at SECONDS xid I CODE     an Xid event on GPU I, delivered once by nvmlEventSetWait_v2
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/nvml_api.h"

#define MAX_GPUS 16
#define MAX_AT 4096

struct nvmlDevice_st {
  int present;
  unsigned index;
  char name[96], uuid[96], serial[64], pci[32];
  unsigned long long memory;
  int ecc, mig, events_rc;
  char procs[512];
};

struct reading {
  unsigned long long used, corr, unc, throttle;
  unsigned util, memutil, temp, power;
  int error;
};

struct at_line {
  double t;
  int gpu;
  int xid; /* >0: an Xid event */
  int delivered;
  char keys[256];
};

static struct nvmlDevice_st g_gpus[MAX_GPUS];
static struct at_line g_at[MAX_AT];
static int g_nat, g_init_rc, g_inited;
static char g_driver[64] = "550.54.15";
static int g_cuda = 12040;
static struct timespec g_t0;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static double since_init(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - g_t0.tv_sec) + (now.tv_nsec - g_t0.tv_nsec) / 1e9;
}

/* Next word of *p (quotes kept out), or NULL at the end of the line. */
static char* word(char** p) {
  char* s = *p;
  while (*s == ' ' || *s == '\t') s++;
  if (*s == '\0' || *s == '\n' || *s == '#') return NULL;
  char* start = s;
  char* out = s;
  int quoted = 0;
  while (*s && *s != '\n' && (quoted || (*s != ' ' && *s != '\t'))) {
    if (*s == '"') {
      quoted = !quoted;
      s++;
      continue;
    }
    *out++ = *s++;
  }
  if (*s) s++;
  *out = '\0';
  *p = s;
  return start;
}

static int load_script(void) {
  const char* path = getenv("GPUALERT_FAKE_NVML_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) {
    fprintf(stderr, "fake NVML: no script (GPUALERT_FAKE_NVML_SCRIPT)\n");
    return NVML_ERROR_UNKNOWN;
  }
  char line[1024];
  memset(g_gpus, 0, sizeof g_gpus);
  g_nat = 0;
  while (fgets(line, sizeof line, f)) {
    char* p = line;
    char* w = word(&p);
    if (!w) continue;
    if (!strcmp(w, "init")) {
      g_init_rc = atoi(word(&p));
    } else if (!strcmp(w, "driver")) {
      snprintf(g_driver, sizeof g_driver, "%s", word(&p));
    } else if (!strcmp(w, "cuda")) {
      g_cuda = atoi(word(&p));
    } else if (!strcmp(w, "gpu")) {
      int i = atoi(word(&p));
      if (i < 0 || i >= MAX_GPUS) continue;
      struct nvmlDevice_st* g = &g_gpus[i];
      g->present = 1;
      g->index = (unsigned)i;
      for (char* kv; (kv = word(&p));) {
        char* eq = strchr(kv, '=');
        if (!eq) continue;
        *eq = '\0';
        const char* v = eq + 1;
        if (!strcmp(kv, "name")) snprintf(g->name, sizeof g->name, "%s", v);
        if (!strcmp(kv, "uuid")) snprintf(g->uuid, sizeof g->uuid, "%s", v);
        if (!strcmp(kv, "serial")) snprintf(g->serial, sizeof g->serial, "%s", v);
        if (!strcmp(kv, "pci")) snprintf(g->pci, sizeof g->pci, "%s", v);
        if (!strcmp(kv, "memory")) g->memory = strtoull(v, NULL, 10);
        if (!strcmp(kv, "ecc")) g->ecc = atoi(v);
        if (!strcmp(kv, "mig")) g->mig = atoi(v);
        if (!strcmp(kv, "events")) g->events_rc = atoi(v);
        if (!strcmp(kv, "procs")) snprintf(g->procs, sizeof g->procs, "%s", v);
      }
    } else if (!strcmp(w, "at") && g_nat < MAX_AT) {
      struct at_line* a = &g_at[g_nat++];
      memset(a, 0, sizeof *a);
      a->t = atof(word(&p));
      char* kind = word(&p);
      a->gpu = atoi(word(&p));
      if (kind && !strcmp(kind, "xid")) {
        a->xid = atoi(word(&p));
      } else {
        snprintf(a->keys, sizeof a->keys, "%s", p);
      }
    }
  }
  fclose(f);
  return NVML_SUCCESS;
}

/* The readings of GPU i now: every "at" line due so far, in order. */
static struct reading now_reading(int i) {
  struct reading r;
  memset(&r, 0, sizeof r);
  double now = since_init();
  for (int k = 0; k < g_nat; k++) {
    struct at_line* a = &g_at[k];
    if (a->xid || a->gpu != i || a->t > now) continue;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", a->keys);
    char* p = buf;
    for (char* kv; (kv = word(&p));) {
      char* eq = strchr(kv, '=');
      if (!eq) continue;
      *eq = '\0';
      unsigned long long v = strtoull(eq + 1, NULL, 10);
      if (!strcmp(kv, "used")) r.used = v;
      if (!strcmp(kv, "util")) r.util = (unsigned)v;
      if (!strcmp(kv, "memutil")) r.memutil = (unsigned)v;
      if (!strcmp(kv, "temp")) r.temp = (unsigned)v;
      if (!strcmp(kv, "power")) r.power = (unsigned)v;
      if (!strcmp(kv, "throttle")) r.throttle = v;
      if (!strcmp(kv, "ecc_corr")) r.corr = v;
      if (!strcmp(kv, "ecc_unc")) r.unc = v;
      if (!strcmp(kv, "error")) r.error = (int)v;
    }
  }
  return r;
}

static int check(nvmlDevice_t d, struct reading* r) {
  if (!g_inited) return NVML_ERROR_UNINITIALIZED;
  if (!d || !d->present) return NVML_ERROR_INVALID_ARGUMENT;
  *r = now_reading((int)d->index);
  return r->error;
}

nvmlReturn_t nvmlInit_v2(void) {
  int rc = load_script();
  if (rc != NVML_SUCCESS) return rc;
  if (g_init_rc != 0) return g_init_rc;
  clock_gettime(CLOCK_MONOTONIC, &g_t0);
  g_inited = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  g_inited = 0;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  if (!g_inited) return NVML_ERROR_UNINITIALIZED;
  unsigned c = 0;
  for (int i = 0; i < MAX_GPUS; i++) c += g_gpus[i].present ? 1u : 0u;
  *n = c;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (!g_inited) return NVML_ERROR_UNINITIALIZED;
  if (i >= MAX_GPUS || !g_gpus[i].present) return NVML_ERROR_INVALID_ARGUMENT;
  *d = &g_gpus[i];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* d) {
  if (!g_inited) return NVML_ERROR_UNINITIALIZED;
  for (int i = 0; i < MAX_GPUS; i++) {
    if (g_gpus[i].present && !strcmp(g_gpus[i].uuid, uuid)) {
      *d = &g_gpus[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t copy_text(nvmlDevice_t d, const char* field_of, char* buf, unsigned len) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  if (strlen(field_of) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(buf, field_of);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* b, unsigned n) { return copy_text(d, d ? d->name : "", b, n); }
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* b, unsigned n) { return copy_text(d, d ? d->uuid : "", b, n); }
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char* b, unsigned n) {
  if (d && !d->serial[0]) return NVML_ERROR_NOT_SUPPORTED;
  return copy_text(d, d ? d->serial : "", b, n);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned* i) {
  struct reading r;
  int rc = check(d, &r);
  if (!rc) *i = d->index;
  return rc;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  memset(p, 0, sizeof *p);
  snprintf(p->busId, sizeof p->busId, "%s", d->pci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  m->total = d->memory;
  m->used = r.used;
  m->free = d->memory > r.used ? d->memory - r.used : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  u->gpu = r.util;
  u->memory = r.memutil;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* t) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *t = r.temp;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
  struct reading r;
  int rc = check(d, &r);
  if (!rc) *mw = r.power;
  return rc;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* v) {
  struct reading r;
  int rc = check(d, &r);
  if (!rc) *v = r.throttle;
  return rc;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int* cur, int* pending) {
  struct reading r;
  int rc = check(d, &r);
  if (!rc) *cur = *pending = d->ecc;
  return rc;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* cur, unsigned* pending) {
  struct reading r;
  int rc = check(d, &r);
  if (!rc) *cur = *pending = (unsigned)d->mig;
  return rc;
}

/* errorType 0 corrected, 1 uncorrected; the same count for volatile and aggregate. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
                                         unsigned long long* v) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  if (!d->ecc) return NVML_ERROR_NOT_SUPPORTED;
  (void)counter;
  *v = type == 0 ? r.corr : r.unc;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count,
                                                     nvmlProcessInfo_t* infos) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  unsigned n = 0;
  FILE* f = d->procs[0] ? fopen(d->procs, "r") : NULL;
  unsigned pid;
  unsigned long long bytes;
  nvmlProcessInfo_t found[64];
  while (f && n < 64 && fscanf(f, "%u %llu", &pid, &bytes) == 2) {
    memset(&found[n], 0, sizeof found[n]);
    found[n].pid = pid;
    found[n].usedGpuMemory = bytes;
    n++;
  }
  if (f) fclose(f);
  if (n > *count) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  memcpy(infos, found, n * sizeof *infos);
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* b, unsigned n) {
  if (!g_inited) return NVML_ERROR_UNINITIALIZED;
  if (strlen(g_driver) + 1 > n) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(b, g_driver);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) {
  if (!g_inited) return NVML_ERROR_UNINITIALIZED;
  *v = g_cuda;
  return NVML_SUCCESS;
}

struct nvmlEventSet_st {
  int registered[MAX_GPUS];
};

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* s) {
  if (!g_inited) return NVML_ERROR_UNINITIALIZED;
  *s = calloc(1, sizeof(struct nvmlEventSet_st));
  return *s ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t s) {
  struct reading r;
  int rc = check(d, &r);
  if (rc) return rc;
  if (d->events_rc) return d->events_rc;
  if (types & GPUALERT_NVML_XID_EVENT) s->registered[d->index] = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t s, nvmlEventData_t* e, unsigned timeout_ms) {
  double until = since_init() + timeout_ms / 1000.0;
  for (;;) {
    pthread_mutex_lock(&g_mu);
    double now = since_init();
    for (int k = 0; k < g_nat; k++) {
      struct at_line* a = &g_at[k];
      if (a->xid && !a->delivered && a->t <= now && a->gpu >= 0 && a->gpu < MAX_GPUS &&
          s->registered[a->gpu]) {
        a->delivered = 1;
        memset(e, 0, sizeof *e);
        e->device = &g_gpus[a->gpu];
        e->eventType = GPUALERT_NVML_XID_EVENT;
        e->eventData = (unsigned long long)a->xid;
        pthread_mutex_unlock(&g_mu);
        return NVML_SUCCESS;
      }
    }
    pthread_mutex_unlock(&g_mu);
    if (now >= until) return NVML_ERROR_TIMEOUT;
    usleep(20000);
  }
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t s) {
  free(s);
  return NVML_SUCCESS;
}
