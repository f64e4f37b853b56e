// `tessera devices [--json]`: every device the registry sees, and every backend that is built
// but unusable here with the reason. The JSON shape is documented in docs/hal.md.
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/registry_session.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::cli {
namespace {

constexpr const char *kDevicesHelp = R"(usage: tessera devices [--json]

Lists every device (backend:index) with vendor, architecture, memory, limits and features,
then the backends that are built but unavailable on this machine, with the reason.
Plugin drivers are loaded from TESSERA_DRIVER_PATH.

options:
  --json    machine-readable output: {"devices":[...],"unavailable":[...]}
)";

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

std::vector<std::string> featureNames(uint64_t f) {
  static const std::pair<uint64_t, const char *> kNames[] = {
      {TSR_FEATURE_FP16, "fp16"},
      {TSR_FEATURE_BF16, "bf16"},
      {TSR_FEATURE_FP64, "fp64"},
      {TSR_FEATURE_INT8, "int8"},
      {TSR_FEATURE_INT16, "int16"},
      {TSR_FEATURE_INT64, "int64"},
      {TSR_FEATURE_SUBGROUPS, "subgroups"},
      {TSR_FEATURE_FLOAT_ATOMICS, "float_atomics"},
      {TSR_FEATURE_UNIFIED_MEMORY, "unified_memory"},
      {TSR_FEATURE_FLOAT_PRESERVE, "float_preserve"},
      {TSR_FEATURE_DENORM_PRESERVE, "denorm_preserve"}};
  std::vector<std::string> out;
  for (auto &[bit, name] : kNames)
    if (f & bit)
      out.push_back(name);
  return out;
}

std::string deviceJson(const tsr_device_info_t &d) {
  char buf[512];
  std::string s = "{\"name\":" + jsonString(d.name) + ",\"backend\":" + jsonString(d.backend) +
                  ",\"vendor\":" + jsonString(d.vendor) +
                  ",\"architecture\":" + jsonString(d.architecture);
  std::snprintf(buf, sizeof buf,
                ",\"total_memory\":%" PRIu64 ",\"compute_units\":%u,\"max_workgroup_size\":[%u,%u,%u]"
                ",\"max_workgroup_total\":%u,\"max_grid_size\":[%u,%u,%u],\"max_shared_memory\":%" PRIu64
                ",\"subgroup_size\":%u,\"buffer_offset_alignment\":%u,\"features\":[",
                d.total_memory, d.compute_units, d.max_workgroup_size[0], d.max_workgroup_size[1],
                d.max_workgroup_size[2], d.max_workgroup_total, d.max_grid_size[0],
                d.max_grid_size[1], d.max_grid_size[2], d.max_shared_memory, d.subgroup_size,
                d.buffer_offset_alignment);
  s += buf;
  auto feats = featureNames(d.features);
  for (size_t i = 0; i < feats.size(); ++i)
    s += (i ? "," : "") + jsonString(feats[i]);
  return s + "]}";
}

} // namespace

int cmdDevices(int argc, char **argv) {
  Args args(argc, argv, 2);
  bool json = false;
  while (!args.empty()) {
    if (isHelp(args.peek())) {
      std::fputs(kDevicesHelp, stdout);
      return 0;
    }
    if (args.flag("--json")) {
      json = true;
      continue;
    }
    return usageError("devices", "unknown argument '" + args.next() + "'");
  }
  RegistrySession session;
  std::string err;
  if (!session.open(&err)) {
    std::fprintf(stderr, "tessera devices: %s\n", err.c_str());
    return 1;
  }
  uint32_t ndev = 0, nun = 0;
  tsr_status_t st = tsr_registry_device_count(session.registry, &ndev);
  if (!st)
    st = tsr_registry_unavailable_count(session.registry, &nun);
  if (st) {
    std::fprintf(stderr, "tessera devices: %s\n", takeMessage(st).c_str());
    return 1;
  }
  std::vector<tsr_device_info_t> devices(ndev);
  for (uint32_t i = 0; i < ndev; ++i) {
    std::memset(&devices[i], 0, sizeof devices[i]);
    devices[i].struct_size = sizeof devices[i];
    if (tsr_status_t s = tsr_registry_device_info(session.registry, i, &devices[i])) {
      std::fprintf(stderr, "tessera devices: %s\n", takeMessage(s).c_str());
      return 1;
    }
  }
  std::vector<tsr_unavailable_t> unavailable(nun);
  for (uint32_t i = 0; i < nun; ++i)
    if (tsr_status_t s = tsr_registry_unavailable(session.registry, i, &unavailable[i])) {
      std::fprintf(stderr, "tessera devices: %s\n", takeMessage(s).c_str());
      return 1;
    }

  if (json) {
    std::string out = "{\"devices\":[";
    for (size_t i = 0; i < devices.size(); ++i)
      out += (i ? "," : "") + deviceJson(devices[i]);
    out += "],\"unavailable\":[";
    for (size_t i = 0; i < unavailable.size(); ++i)
      out += std::string(i ? "," : "") + "{\"backend\":" + jsonString(unavailable[i].backend) +
             ",\"reason\":" + jsonString(unavailable[i].reason) + "}";
    std::printf("%s]}\n", out.c_str());
    return 0;
  }
  for (const auto &d : devices) {
    std::string feats;
    for (const auto &f : featureNames(d.features))
      feats += (feats.empty() ? "" : " ") + f;
    std::printf("%-10s %s %s, %u compute units, %.1f GiB, workgroup <= %u, shared %" PRIu64
                " KiB, subgroup %u\n           features: %s\n",
                d.name, d.vendor, d.architecture, d.compute_units,
                double(d.total_memory) / (1ull << 30), d.max_workgroup_total,
                d.max_shared_memory / 1024, d.subgroup_size, feats.c_str());
  }
  if (devices.empty())
    std::printf("no devices\n");
  for (const auto &u : unavailable)
    std::printf("unavailable: %s: %s\n", u.backend, u.reason);
  return 0;
}

} // namespace tessera::cli
