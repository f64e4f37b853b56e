/* The fake Level Zero loader's modules, kernels and launches (see fake_libze.c for the whole
 * fake): a module is the list of its SPIR-V OpEntryPoint names; a launch of a known entry
 * runs it on the host over the arguments of backends/levelzero/levelzero_abi.h, checking
 * each argument's size as a real driver checks it against the kernel's signature.
 * Test-only.
 */
#include "backends/levelzero/runtime/tests/fake_libze.h"

#include <stdio.h>

static int modeIs(const char *m) {
  const char *v = getenv("TESSERA_FAKE_ZE_MODE");
  return v && strcmp(v, m) == 0;
}

enum {
  SPIRV_MAGIC = 0x07230203,
  SPIRV_HEADER_WORDS = 5,
  OP_ENTRY_POINT = 15,
  OP_TYPE_INT = 21,
  OP_TYPE_FLOAT = 22,
  OP_TYPE_POINTER = 32,
  OP_FUNCTION = 54,
  OP_FUNCTION_PARAMETER = 55,
  OP_FUNCTION_END = 56
};

/* The entry's signature being read, if `function` is an entry's function. */
static struct Signature *signatureOf(struct _ze_module_handle_t *m, uint32_t function) {
  for (int e = 0; e < m->count; ++e)
    if (m->signatures[e].function == function)
      return &m->signatures[e];
  return NULL;
}

/* OpEntryPoint names of the SPIR-V words (the name is the literal at word 3), and their
 * functions' parameter sizes. One pass: the logical layout puts entry points before types
 * and types before functions. */
static void scanModule(const uint32_t *words, size_t count, struct _ze_module_handle_t *m) {
  const uint32_t bound = count > 3 ? words[3] : 0;
  uint8_t *sizes = calloc(bound ? bound : 1, 1); /* byte size of each type id */
  struct Signature *current = NULL;
  for (size_t i = SPIRV_HEADER_WORDS; i < count;) {
    const uint32_t wc = words[i] >> 16, op = words[i] & 0xffff;
    if (wc == 0 || i + wc > count)
      break;
    const uint32_t *w = &words[i];
    if (op == OP_ENTRY_POINT && wc >= 4 && m->count < MAX_ENTRIES) {
      size_t bytes = (wc - 3) * 4;
      if (bytes >= NAME_MAX_LEN)
        bytes = NAME_MAX_LEN - 1;
      memcpy(m->entries[m->count], &w[3], bytes);
      m->entries[m->count][bytes] = '\0';
      m->signatures[m->count].function = w[2];
      m->signatures[m->count].paramCount = -1;
      ++m->count;
    } else if ((op == OP_TYPE_INT || op == OP_TYPE_FLOAT) && wc >= 3 && w[1] < bound) {
      sizes[w[1]] = (uint8_t)(w[2] / 8);
    } else if (op == OP_TYPE_POINTER && wc >= 2 && w[1] < bound) {
      sizes[w[1]] = 8; /* Physical64 */
    } else if (op == OP_FUNCTION && wc >= 3) {
      current = signatureOf(m, w[2]);
      if (current)
        current->paramCount = 0;
    } else if (op == OP_FUNCTION_PARAMETER && wc >= 2 && current &&
               current->paramCount < MAX_ARGS) {
      current->paramSizes[current->paramCount++] = w[1] < bound ? sizes[w[1]] : 0;
    } else if (op == OP_FUNCTION_END) {
      current = NULL;
    }
    i += wc;
  }
  free(sizes);
}

static ze_result_t buildLog(ze_module_build_log_handle_t *out, const char *text) {
  if (!out)
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  struct _ze_module_build_log_handle_t *log = track(calloc(1, sizeof *log));
  snprintf(log->text, sizeof log->text, "%s", text);
  *out = log;
  return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
}

EXPORT ze_result_t zeModuleCreate(ze_context_handle_t c, ze_device_handle_t device,
                                  const ze_module_desc_t *desc, ze_module_handle_t *out,
                                  ze_module_build_log_handle_t *log) {
  REQUIRE_INIT();
  if (log)
    *log = NULL;
  if (!c || device != &fake_ze_device || desc->stype != ZE_STRUCTURE_TYPE_MODULE_DESC ||
      desc->format != ZE_MODULE_FORMAT_IL_SPIRV)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (failing(__func__, ZE_RESULT_ERROR_MODULE_BUILD_FAILURE))
    return buildLog(log, "fake ze: error: the build failed on request (TESSERA_FAKE_ZE_FAIL)");
  uint32_t magic = 0;
  if (desc->inputSize >= 4)
    memcpy(&magic, desc->pInputModule, 4);
  if (magic != SPIRV_MAGIC || desc->inputSize % 4) {
    char text[128];
    snprintf(text, sizeof text, "fake ze: error: not a SPIR-V module (first word 0x%08x)", magic);
    return buildLog(log, text);
  }
  struct _ze_module_handle_t *m = track(calloc(1, sizeof *m));
  uint32_t *words = malloc(desc->inputSize);
  memcpy(words, desc->pInputModule, desc->inputSize);
  scanModule(words, desc->inputSize / 4, m);
  free(words);
  *out = m;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeModuleDestroy(ze_module_handle_t m) {
  untrack(m);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeModuleBuildLogGetString(ze_module_build_log_handle_t log, size_t *size,
                                             char *text) {
  size_t need = strlen(log->text) + 1;
  if (text)
    memcpy(text, log->text, *size < need ? *size : need);
  *size = need;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeModuleBuildLogDestroy(ze_module_build_log_handle_t log) {
  untrack(log);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeKernelCreate(ze_module_handle_t m, const ze_kernel_desc_t *desc,
                                  ze_kernel_handle_t *out) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
  if (!m || desc->stype != ZE_STRUCTURE_TYPE_KERNEL_DESC || !desc->pKernelName)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < m->count; ++i) {
    if (strcmp(m->entries[i], desc->pKernelName) != 0)
      continue;
    struct _ze_kernel_handle_t *k = track(calloc(1, sizeof *k));
    snprintf(k->name, sizeof k->name, "%s", desc->pKernelName);
    k->signature = m->signatures[i];
    *out = k;
    return ZE_RESULT_SUCCESS;
  }
  return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
}

EXPORT ze_result_t zeKernelDestroy(ze_kernel_handle_t k) {
  untrack(k);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeKernelSetGroupSize(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
  if (x == 0 || y == 0 || z == 0 || (uint64_t)x * y * z > 1024)
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  k->group[0] = x;
  k->group[1] = y;
  k->group[2] = z;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t k, uint32_t index, size_t size,
                                            const void *value) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
  const struct Signature *sig = &k->signature;
  if (index >= MAX_ARGS || (sig->paramCount >= 0 && index >= (uint32_t)sig->paramCount))
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  if (size == 0 || size > 8 || !value || (sig->paramCount >= 0 && size != sig->paramSizes[index]))
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  k->args[index].size = size;
  k->args[index].set = 1;
  memset(k->args[index].bytes, 0, 8);
  memcpy(k->args[index].bytes, value, size);
  return ZE_RESULT_SUCCESS;
}

/* --- launches ------------------------------------------------------------------------------ */

static uint64_t u64(const struct Arg *a) {
  uint64_t v = 0;
  memcpy(&v, a->bytes, a->size < 8 ? a->size : 8);
  return v;
}
/* A buffer parameter's view: base + offset, `bytes` long (levelzero_abi.h). */
static char *view(const struct Arg *a, uint64_t *bytes) {
  *bytes = u64(&a[2]);
  return (char *)(uintptr_t)u64(&a[0]) + u64(&a[1]);
}

/* Checks the argument sizes against `sizes` (0-terminated; the workgroup and the control
 * are appended by the ABI and checked here too), as a driver checks the kernel signature. */
static ze_result_t checkArgs(const struct _ze_kernel_handle_t *k, const size_t *sizes, int *count) {
  int n = 0;
  for (; sizes[n]; ++n)
    if (!k->args[n].set || k->args[n].size != sizes[n])
      return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  for (int d = 0; d < 3; ++d, ++n)
    if (!k->args[n].set || k->args[n].size != 4)
      return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  if (!k->args[n].set || k->args[n].size != 8)
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  uint64_t wg = u64(&k->args[n - 3]) * u64(&k->args[n - 2]) * u64(&k->args[n - 1]);
  if (k->group[1] != 1 || k->group[2] != 1 || wg != k->group[0])
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION; /* not the ABI's 1-D workgroup */
  *count = n + 1;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t runVadd(const struct _ze_kernel_handle_t *k, const ze_group_count_t *g) {
  static const size_t sizes[] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 4, 0};
  int count = 0;
  ze_result_t r = checkArgs(k, sizes, &count);
  if (r)
    return r;
  uint64_t na, nb, nc;
  const float *a = (const float *)view(&k->args[0], &na);
  const float *b = (const float *)view(&k->args[3], &nb);
  float *c = (float *)view(&k->args[6], &nc);
  int32_t n = (int32_t)u64(&k->args[9]);
  uint64_t items = (uint64_t)g->groupCountX * g->groupCountY * g->groupCountZ * k->group[0];
  for (uint64_t i = 0; i < items && (int64_t)i < n; ++i)
    if ((i + 1) * 4 <= na && (i + 1) * 4 <= nb && (i + 1) * 4 <= nc) /* robust mode */
      c[i] = a[i] + b[i];
  return ZE_RESULT_SUCCESS;
}

static ze_result_t runStoreParams(const struct _ze_kernel_handle_t *k) {
  static const size_t sizes[] = {8, 8, 8, 1, 2, 4, 8, 2, 2, 4, 8, 0};
  int count = 0;
  ze_result_t r = checkArgs(k, sizes, &count);
  if (r)
    return r;
  uint64_t bytes;
  char *out = view(&k->args[0], &bytes);
  size_t at = 0;
  for (int i = 3; i < 11; ++i) {
    size_t size = k->args[i].size;
    at = (at + size - 1) / size * size;
    if (at + size > bytes)
      return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    memcpy(out + at, k->args[i].bytes, size);
    at += size;
  }
  return ZE_RESULT_SUCCESS;
}

/* Work-item (1, 0, 0) of group (0, 0, 0) stores to index -2000000000 of `out` at 4:3. */
static ze_result_t runFault(const struct _ze_kernel_handle_t *k) {
  static const size_t sizes[] = {8, 8, 8, 0};
  int count = 0;
  ze_result_t r = checkArgs(k, sizes, &count);
  if (r)
    return r;
  uint32_t *control = (uint32_t *)(uintptr_t)u64(&k->args[count - 1]);
  int64_t index = -2000000000;
  uint64_t elements = u64(&k->args[2]) / 4;
  uint32_t record[14] = {2 /* STORE_OUT_OF_BOUNDS */,
                         4,
                         3,
                         0,
                         (uint32_t)(uint64_t)index,
                         (uint32_t)((uint64_t)index >> 32),
                         (uint32_t)elements,
                         (uint32_t)(elements >> 32),
                         1,
                         0,
                         0,
                         0,
                         0,
                         0};
  uint32_t none = 0;
  if (__atomic_compare_exchange_n(&control[1], &none, record[0], 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    memcpy(&control[2], &record[1], sizeof record - 4);
  return ZE_RESULT_SUCCESS;
}

/* Runs until its cancel flag is set: see zeEventHostSynchronize. */
static ze_result_t startSpin(const struct _ze_kernel_handle_t *k) {
  static const size_t sizes[] = {0};
  int count = 0;
  ze_result_t r = checkArgs(k, sizes, &count);
  if (r)
    return r;
  if (fake_ze_spin.control)
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; /* one at a time */
  fake_ze_spin.control = (uint32_t *)(uintptr_t)u64(&k->args[count - 1]);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t list,
                                                   ze_kernel_handle_t k,
                                                   const ze_group_count_t *groups,
                                                   ze_event_handle_t signal, uint32_t n,
                                                   ze_event_handle_t *waits) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (!list || !k || !groups)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  ze_result_t r = waitsDone(n, waits);
  if (r)
    return r;
  for (int i = 0; i < k->signature.paramCount; ++i)
    if (!k->args[i].set)
      return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX; /* a parameter left unset */
  if (strcmp(k->name, "vadd") == 0 || strcmp(k->name, "vector_add") == 0) /* ir/examples' */
    r = runVadd(k, groups);
  else if (strcmp(k->name, "store_params") == 0)
    r = runStoreParams(k);
  else if (strcmp(k->name, "fault") == 0)
    r = runFault(k);
  else if (strcmp(k->name, "spin") == 0)
    r = startSpin(k);
  else if (!modeIs("abi_only"))
    r = ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; /* an entry the fake cannot run */
  if (r)
    return r;
  __atomic_add_fetch(&fake_ze_launches, 1, __ATOMIC_RELAXED);
  memcpy(fake_ze_last_group_size, k->group, sizeof k->group);
  fake_ze_last_group_count[0] = groups->groupCountX;
  fake_ze_last_group_count[1] = groups->groupCountY;
  fake_ze_last_group_count[2] = groups->groupCountZ;
  signalIfAny(signal);
  return ZE_RESULT_SUCCESS;
}
