/* A fake NCCL for the native collective channel's tests on machines without a GPU, built
 * twice: as libnccl.so.2 over the fake libcuda (FAKE_NCCL_OVER_CUDA; the cuda driver loads it
 * through TESSERA_NCCL_LIBRARY) and as librccl.so.1 over the fake libamdhip64 (the rocm
 * driver, TESSERA_RCCL_LIBRARY). Device memory of those fakes is host memory, so this one
 * reads and writes it directly.
 *
 * Like NCCL, ncclCommInitRank blocks until every rank of the id joined (tests call it from
 * one thread per rank), a communicator is bound to the device current at its creation, and
 * each call checks that device is current (the fake runtime's per-thread state, read with
 * dlsym), so the tests prove the driver makes its device current. Unlike NCCL, work runs in
 * the caller's thread: the k-th collective of a group runs when its last rank calls it, a
 * send when its matching receive is posted (or the reverse). That never blocks, so the ranks
 * of a test may be driven from one thread; a rank's results are complete once every rank
 * has made the call. Collectives of one seq must agree (kind, count, type, op, root): a
 * call that differs from an earlier rank's gets ncclInvalidUsage (NCCL leaves it undefined).
 *
 * TESSERA_FAKE_NCCL_FAIL=<function>=<ncclResult_t> makes that function fail with that result
 * (ncclGetLastError then names it). Counters exported below let tests check what the driver
 * called and that it released everything. Test-only.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum { OK = 0, CUDA_ERROR = 1, SYSTEM_ERROR = 2, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };
enum { REMOTE_ERROR = 6 };
enum { SUM, PROD, MAX, MIN, AVG };
enum { INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, TYPES };
enum { ALL_REDUCE = 1, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE };

typedef struct {
  char internal[128];
} ncclUniqueId;

/* What tests read through dlsym. */
EXPORT int fake_nccl_live_comms;
EXPORT int fake_nccl_bad_handles;     /* calls on a communicator destroyed or aborted */
EXPORT int fake_nccl_grouped_p2p;     /* ncclSend / ncclRecv calls made inside a group */
EXPORT int fake_nccl_ungrouped_p2p;   /* ... and outside one */
EXPORT char fake_nccl_last_call[160]; /* "ncclAllReduce count=3 type=3 op=3 root=-1" */

#define MAX_RANKS 64
#define MAX_COMMS 256

typedef struct Group Group;
typedef struct {
  Group *group;
  int rank, device;
  uint64_t seq; /* collectives made so far */
} Comm;

typedef struct Coll { /* the seq-th collective of a group, as far as ranks have called it */
  uint64_t seq;
  int kind, type, op, root, posted;
  size_t count;
  const void *send[MAX_RANKS];
  void *recv[MAX_RANKS];
  struct Coll *next;
} Coll;

typedef struct P2p { /* a send or receive waiting for its match */
  int src, dst, isSend;
  size_t bytes;
  void *buffer;
  struct P2p *next;
} P2p;

struct Group {
  char id[128];
  int size, joined, live, complete, aborted;
  Comm *ranks[MAX_RANKS];
  Coll *colls;
  P2p *p2p;
  Group *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t joined = PTHREAD_COND_INITIALIZER;
static Group *groups;
static Comm *live[MAX_COMMS];
static char lastError[256];
static __thread int groupDepth;

static int fail(int result, const char *format, const char *detail) {
  snprintf(lastError, sizeof lastError, format, detail);
  return result;
}

/* TESSERA_FAKE_NCCL_FAIL=name=code. */
static int injected(const char *function) {
  const char *spec = getenv("TESSERA_FAKE_NCCL_FAIL");
  size_t n = strlen(function);
  if (!spec || strncmp(spec, function, n) != 0 || spec[n] != '=')
    return OK;
  return fail(atoi(spec + n + 1), "fake failure injected in %s", function);
}

/* The device current on this thread in the fake runtime; -1 none, -2 no fake runtime. */
static int currentDevice(void) {
#ifdef FAKE_NCCL_OVER_CUDA
  const char *path = getenv("TESSERA_CUDA_LIBRARY"), *symbol = "fake_cuda_context_depth";
#else
  const char *path = getenv("TESSERA_HIP_LIBRARY"), *symbol = "fake_hip_current_device";
#endif
  void *library = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  int *value = library ? dlsym(library, symbol) : NULL; /* TLS: this thread's address */
  if (library)
    dlclose(library); /* drops the reference NOLOAD took; the runtime stays loaded */
  if (!value)
    return -2;
#ifdef FAKE_NCCL_OVER_CUDA
  return *value > 0 ? 0 : -1; /* a pushed context: the one device */
#else
  return *value;
#endif
}

static int isLive(const Comm *comm) {
  for (int i = 0; i < MAX_COMMS; ++i)
    if (comm && live[i] == comm)
      return 1;
  return 0;
}

/* Checks shared by every call on a communicator (the lock is held). */
static int checkComm(const Comm *comm, const void *stream, const char *function) {
  if (!isLive(comm)) {
    ++fake_nccl_bad_handles;
    return fail(INVALID_ARGUMENT, "%s: not a live communicator", function);
  }
  if (currentDevice() != comm->device)
    return fail(CUDA_ERROR, "%s: the communicator's device is not current", function);
#ifndef FAKE_NCCL_OVER_CUDA
  /* The fake HIP's objects start with the device they were made on. */
  if (stream && *(const int *)stream != comm->device)
    return fail(CUDA_ERROR, "%s: a stream of another device", function);
#endif
  if (!stream)
    return fail(INVALID_ARGUMENT, "%s: no stream", function);
  if (comm->group->aborted)
    return fail(REMOTE_ERROR, "%s: a peer aborted the communicator", function);
  return injected(function);
}

EXPORT const char *ncclGetErrorString(int result) {
  static const char *const text[] = {"no error",
                                     "unhandled cuda error",
                                     "unhandled system error",
                                     "internal error",
                                     "invalid argument",
                                     "invalid usage",
                                     "remote process exited or there was a network error",
                                     "NCCL operation in progress"};
  return result >= 0 && result < 8 ? text[result] : "unknown result code";
}

EXPORT const char *ncclGetLastError(void *comm) {
  (void)comm;
  return lastError;
}

EXPORT int ncclGetUniqueId(ncclUniqueId *id) {
  static int counter;
  if (injected("ncclGetUniqueId"))
    return injected("ncclGetUniqueId");
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "fake-nccl:%d:%d", (int)getpid(),
           __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST));
  return OK;
}

static Group *findGroup(const ncclUniqueId *id, int size) {
  for (Group *g = groups; g; g = g->next)
    if (!g->complete && memcmp(g->id, id->internal, sizeof g->id) == 0)
      return g;
  Group *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  memcpy(g->id, id->internal, sizeof g->id);
  g->size = size;
  g->next = groups;
  groups = g;
  return g;
}

static void unlinkGroup(Group *group) {
  for (Group **g = &groups; *g; g = &(*g)->next)
    if (*g == group) {
      *g = group->next;
      break;
    }
  while (group->colls) {
    Coll *c = group->colls;
    group->colls = c->next;
    free(c);
  }
  while (group->p2p) {
    P2p *p = group->p2p;
    group->p2p = p->next;
    free(p);
  }
  free(group);
}

EXPORT int ncclCommInitRank(Comm **out, int nranks, ncclUniqueId id, int rank) {
  if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
    return fail(INVALID_ARGUMENT, "%s: rank or size out of range", "ncclCommInitRank");
  int device = currentDevice();
  if (device < 0)
    return fail(CUDA_ERROR, "%s: no current device", "ncclCommInitRank");
  if (injected("ncclCommInitRank"))
    return injected("ncclCommInitRank");
  pthread_mutex_lock(&lock);
  Group *g = findGroup(&id, nranks);
  Comm *comm = calloc(1, sizeof *comm);
  int slot = 0;
  while (slot < MAX_COMMS && live[slot])
    ++slot;
  if (!g || !comm || slot == MAX_COMMS || g->size != nranks || g->ranks[rank]) {
    free(comm);
    pthread_mutex_unlock(&lock);
    return fail(INVALID_ARGUMENT, "%s: size differs from the other ranks' or rank taken",
                "ncclCommInitRank");
  }
  *comm = (Comm){g, rank, device, 0};
  g->ranks[rank] = comm;
  ++g->joined;
  ++g->live;
  live[slot] = comm;
  ++fake_nccl_live_comms;
  pthread_cond_broadcast(&joined);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 20;
  while (g->joined < g->size)
    if (pthread_cond_timedwait(&joined, &lock, &deadline) == ETIMEDOUT)
      break;
  int result = g->joined == g->size ? OK : SYSTEM_ERROR;
  g->complete = result == OK;
  pthread_mutex_unlock(&lock);
  if (result != OK)
    return fail(result, "%s: timed out waiting for the other ranks", "ncclCommInitRank");
  *out = comm;
  return OK;
}

/* Removes `comm` (the lock is held); `abort` also fails the peers' later calls. */
static int release(Comm *comm, int abort, const char *function) {
  if (!isLive(comm)) {
    ++fake_nccl_bad_handles;
    return fail(INVALID_ARGUMENT, "%s: not a live communicator", function);
  }
  if (currentDevice() != comm->device)
    return fail(CUDA_ERROR, "%s: the communicator's device is not current", function);
  for (int i = 0; i < MAX_COMMS; ++i)
    if (live[i] == comm)
      live[i] = NULL;
  --fake_nccl_live_comms;
  Group *g = comm->group;
  g->ranks[comm->rank] = NULL;
  g->aborted |= abort;
  if (--g->live == 0)
    unlinkGroup(g);
  free(comm);
  return OK;
}

EXPORT int ncclCommDestroy(Comm *comm) {
  pthread_mutex_lock(&lock);
  int result = release(comm, 0, "ncclCommDestroy");
  pthread_mutex_unlock(&lock);
  return result;
}

EXPORT int ncclCommAbort(Comm *comm) {
  pthread_mutex_lock(&lock);
  int result = release(comm, 1, "ncclCommAbort");
  pthread_mutex_unlock(&lock);
  return result;
}

/* ---- arithmetic on NCCL's types --------------------------------------------------------- */

static const size_t kTypeBytes[TYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

static float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = (float)mantissa / 16777216.0f; /* 2^-24 */
  else if (exponent == 31)
    magnitude = mantissa ? __builtin_nanf("") : __builtin_inff();
  else
    magnitude = (float)(mantissa | 0x400) * (float)(1u << exponent) / 33554432.0f; /* 2^-25 */
  return sign ? -magnitude : magnitude;
}

/* Exact for the values the tests use (representable in f16); rounds toward zero otherwise. */
static uint16_t floatToHalf(float f) {
  uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = f < 0 ? -f : f;
  if (a == 0)
    return sign;
  int exponent = 15;
  while (a >= 2.0f && exponent < 31) {
    a /= 2.0f;
    ++exponent;
  }
  while (a < 1.0f && exponent > 1) {
    a *= 2.0f;
    --exponent;
  }
  if (a < 1.0f) /* subnormal */
    return sign | (uint16_t)(a * 1024.0f);
  return sign | (uint16_t)(exponent << 10) | (uint16_t)((a - 1.0f) * 1024.0f);
}

static double load(int type, const void *p, size_t i) {
  switch (type) {
  case FLOAT16:
    return halfToFloat(((const uint16_t *)p)[i]);
  case BFLOAT16: {
    uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
  }
  case FLOAT32:
    return ((const float *)p)[i];
  default:
    return ((const double *)p)[i];
  }
}

static void store(int type, void *p, size_t i, double v) {
  switch (type) {
  case FLOAT16:
    ((uint16_t *)p)[i] = floatToHalf((float)v);
    return;
  case BFLOAT16: {
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    ((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
    return;
  }
  case FLOAT32:
    ((float *)p)[i] = (float)v;
    return;
  default:
    ((double *)p)[i] = v;
  }
}

/* An integer element as its bits, zero-extended, and as a signed value. */
static uint64_t loadBits(int type, const void *p, size_t i) {
  uint64_t v = 0;
  memcpy(&v, (const char *)p + i * kTypeBytes[type], kTypeBytes[type]);
  return v;
}
static int64_t asSigned(int type, uint64_t bits) {
  int shift = 64 - 8 * (int)kTypeBytes[type];
  return shift ? (int64_t)(bits << shift) >> shift : (int64_t)bits;
}

/* recv[i] = op over ranks (in rank order) of src[r][i], for `count` elements. */
static void fold(int type, int op, int ranks, const void *const *src, size_t offset, void *dst,
                 size_t count) {
  int isFloat = type >= FLOAT16, isSigned = type == INT8 || type == INT32 || type == INT64;
  for (size_t i = 0; i < count; ++i) {
    size_t e = offset + i;
    if (isFloat) {
      double acc = load(type, src[0], e);
      for (int r = 1; r < ranks; ++r) {
        double x = load(type, src[r], e);
        acc = op == PROD  ? acc * x
              : op == MAX ? (x > acc ? x : acc)
              : op == MIN ? (x < acc ? x : acc)
                          : acc + x;
      }
      store(type, dst, i, op == AVG ? acc / ranks : acc);
      continue;
    }
    uint64_t acc = loadBits(type, src[0], e);
    for (int r = 1; r < ranks; ++r) {
      uint64_t x = loadBits(type, src[r], e);
      int less = isSigned ? asSigned(type, x) < asSigned(type, acc) : x < acc;
      int greater = isSigned ? asSigned(type, x) > asSigned(type, acc) : x > acc;
      acc = op == PROD  ? acc * x
            : op == MAX ? (greater ? x : acc)
            : op == MIN ? (less ? x : acc)
                        : acc + x;
    }
    if (op == AVG) { /* the sum wrapped to the type, then divided, truncating toward zero */
      uint64_t sum = loadBits(type, &acc, 0);
      acc = isSigned ? (uint64_t)(asSigned(type, sum) / ranks) : sum / (uint64_t)ranks;
    }
    memcpy((char *)dst + i * kTypeBytes[type], &acc, kTypeBytes[type]);
  }
}

/* Runs a collective every rank has called (the lock is held). Outputs are computed into
 * scratch first, so in-place calls read their inputs before any is overwritten. */
static int run(Group *g, const Coll *c) {
  size_t es = kTypeBytes[c->type], n = (size_t)g->size, block = c->count * es;
  size_t outputs = c->kind == ALL_GATHER ? n * block : c->kind == REDUCE_SCATTER ? block : block;
  char *scratch = malloc(n * outputs + 1);
  if (!scratch)
    return fail(SYSTEM_ERROR, "%s: out of memory", "fake nccl");
  for (size_t r = 0; r < n; ++r) {
    char *out = scratch + r * outputs;
    switch (c->kind) {
    case ALL_REDUCE:
    case REDUCE:
      fold(c->type, c->op, g->size, c->send, 0, out, c->count);
      break;
    case REDUCE_SCATTER:
      fold(c->type, c->op, g->size, c->send, r * c->count, out, c->count);
      break;
    case ALL_GATHER:
      for (size_t k = 0; k < n; ++k)
        memcpy(out + k * block, c->send[k], block);
      break;
    case BROADCAST:
      memcpy(out, c->send[c->root], block);
      break;
    }
  }
  for (size_t r = 0; r < n; ++r)
    if (c->kind != REDUCE || (int)r == c->root)
      memcpy(c->recv[r], scratch + r * outputs, outputs);
  free(scratch);
  return OK;
}

static int collective(const char *function, int kind, const void *send, void *recv, size_t count,
                      int type, int op, int root, Comm *comm, void *stream) {
  pthread_mutex_lock(&lock);
  snprintf(fake_nccl_last_call, sizeof fake_nccl_last_call, "%s count=%zu type=%d op=%d root=%d",
           function, count, type, op, root);
  int result = checkComm(comm, stream, function);
  Group *g = result == OK ? comm->group : NULL;
  int isRoot = g && comm->rank == root;
  if (result == OK && (type < 0 || type >= TYPES || op < SUM || op > AVG ||
                       ((kind == BROADCAST || kind == REDUCE) && (root < 0 || root >= g->size))))
    result = fail(INVALID_ARGUMENT, "%s: bad type, operator or root", function);
  else if (result == OK &&
           ((!send && (kind != BROADCAST || isRoot)) || (!recv && (kind != REDUCE || isRoot))))
    result = fail(INVALID_ARGUMENT, "%s: a NULL buffer where one is used", function);
  Coll *c = NULL;
  for (Coll *p = g ? g->colls : NULL; p; p = p->next)
    if (p->seq == comm->seq)
      c = p;
  if (result == OK && !c) {
    c = calloc(1, sizeof *c);
    if (!c)
      result = fail(SYSTEM_ERROR, "%s: out of memory", function);
    else {
      *c = (Coll){.seq = comm->seq,
                  .kind = kind,
                  .type = type,
                  .op = op,
                  .root = root,
                  .count = count,
                  .next = g->colls};
      g->colls = c;
    }
  } else if (result == OK && (c->kind != kind || c->count != count || c->type != type ||
                              c->op != op || c->root != root))
    result =
        fail(INVALID_USAGE, "%s: differs from the other ranks' call of the same seq", function);
  if (result == OK) {
    ++comm->seq;
    c->send[comm->rank] = send;
    c->recv[comm->rank] = recv;
    if (++c->posted == g->size) {
      result = run(g, c);
      for (Coll **p = &g->colls; *p; p = &(*p)->next)
        if (*p == c) {
          *p = c->next;
          break;
        }
      free(c);
    }
  }
  pthread_mutex_unlock(&lock);
  return result;
}

EXPORT int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, Comm *comm,
                         void *stream) {
  return collective("ncclAllReduce", ALL_REDUCE, send, recv, count, type, op, -1, comm, stream);
}

EXPORT int ncclAllGather(const void *send, void *recv, size_t count, int type, Comm *comm,
                         void *stream) {
  return collective("ncclAllGather", ALL_GATHER, send, recv, count, type, SUM, -1, comm, stream);
}

EXPORT int ncclReduceScatter(const void *send, void *recv, size_t count, int type, int op,
                             Comm *comm, void *stream) {
  return collective("ncclReduceScatter", REDUCE_SCATTER, send, recv, count, type, op, -1, comm,
                    stream);
}

EXPORT int ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, Comm *comm,
                         void *stream) {
  return collective("ncclBroadcast", BROADCAST, send, recv, count, type, SUM, root, comm, stream);
}

EXPORT int ncclReduce(const void *send, void *recv, size_t count, int type, int op, int root,
                      Comm *comm, void *stream) {
  return collective("ncclReduce", REDUCE, send, recv, count, type, op, root, comm, stream);
}

/* Posts one side of a transfer and completes it with the oldest matching other side. */
static int p2p(const char *function, int isSend, void *buffer, size_t count, int type, int peer,
               Comm *comm, void *stream) {
  pthread_mutex_lock(&lock);
  snprintf(fake_nccl_last_call, sizeof fake_nccl_last_call, "%s count=%zu type=%d peer=%d",
           function, count, type, peer);
  int result = checkComm(comm, stream, function);
  if (result == OK &&
      (type < 0 || type >= TYPES || peer < 0 || peer >= comm->group->size || !buffer))
    result = fail(INVALID_ARGUMENT, "%s: bad type, peer or buffer", function);
  if (result == OK) {
    ++*(groupDepth ? &fake_nccl_grouped_p2p : &fake_nccl_ungrouped_p2p);
    Group *g = comm->group;
    size_t bytes = count * kTypeBytes[type];
    int src = isSend ? comm->rank : peer, dst = isSend ? peer : comm->rank;
    P2p **match = &g->p2p;
    while (*match && !((*match)->src == src && (*match)->dst == dst && (*match)->isSend != isSend))
      match = &(*match)->next;
    if (*match) {
      P2p *other = *match;
      if (other->bytes != bytes)
        result = fail(INVALID_USAGE, "%s: the matching call moves another size", function);
      else
        memcpy(isSend ? other->buffer : buffer, isSend ? buffer : other->buffer, bytes);
      *match = other->next;
      free(other);
    } else {
      P2p *mine = calloc(1, sizeof *mine), **tail = &g->p2p;
      while (*tail)
        tail = &(*tail)->next;
      if (mine)
        *mine = (P2p){src, dst, isSend, bytes, buffer, NULL};
      *tail = mine;
      if (!mine)
        result = fail(SYSTEM_ERROR, "%s: out of memory", function);
    }
  }
  pthread_mutex_unlock(&lock);
  return result;
}

EXPORT int ncclSend(const void *send, size_t count, int type, int peer, Comm *comm, void *stream) {
  return p2p("ncclSend", 1, (void *)send, count, type, peer, comm, stream);
}

EXPORT int ncclRecv(void *recv, size_t count, int type, int peer, Comm *comm, void *stream) {
  return p2p("ncclRecv", 0, recv, count, type, peer, comm, stream);
}

EXPORT int ncclGroupStart(void) {
  ++groupDepth;
  return OK;
}

EXPORT int ncclGroupEnd(void) {
  if (groupDepth == 0)
    return fail(INVALID_USAGE, "%s: no group started", "ncclGroupEnd");
  --groupDepth;
  return injected("ncclGroupEnd");
}
