// `tessera devices [--json]`: every device the registry sees, and every backend that is built
// but unusable here with the reason. The JSON shape is documented in docs/hal.md.
#include "backends/target.h"
#include "tessera/program.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/registry_session.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::cli {
namespace {

constexpr const char *kDevicesDescription =
    R"(Lists every device (backend:index) with vendor, architecture, memory, limits, features and
the compiler target that compiles for it (with the tolerance profile it declares), then the
backends that are built but unavailable on this machine, with the reason.
Plugin drivers are loaded from TESSERA_DRIVER_PATH.)";

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

nlohmann::ordered_json deviceInfoJson(const tsr_device_info_t &d);

// A fixed-size name field as a string, even when a driver filled it without a terminator.
template <size_t N> std::string field(const char (&s)[N]) { return std::string(s, strnlen(s, N)); }

// The device's capability record (tsr_device_compiler_caps) as a JSON object of its
// `key=value` lines; {} when its driver has none or it cannot be opened.
nlohmann::ordered_json capsJson(tsr_registry_t registry, const tsr_device_info_t &d) {
  nlohmann::ordered_json caps = nlohmann::ordered_json::object();
  tsr_device_t device = nullptr;
  if (tsr_status_t st = tsr_registry_open_device(registry, d.name, &device)) {
    tsr_status_free(st);
    return caps;
  }
  std::string record, err;
  std::vector<std::pair<std::string, std::string>> entries;
  bool ok = deviceCompilerCaps(device, &record, &err) && parseCapsRecord(record, &entries, &err);
  tsr_device_release(device);
  for (size_t i = 0; ok && i < entries.size(); ++i)
    caps[entries[i].first] = entries[i].second;
  return caps;
}

nlohmann::ordered_json deviceJson(const tsr_device_info_t &d, nlohmann::ordered_json caps) {
  nlohmann::ordered_json j = deviceInfoJson(d);
  j["compiler_caps"] = std::move(caps);
  const Target *t = targetForDevice(d);
  j["target"] = t ? nlohmann::ordered_json(std::string(t->name())) : nlohmann::ordered_json();
  if (t)
    j["profile"] = precisionProfileName(t->declaredProfile());
  return j;
}

nlohmann::ordered_json deviceInfoJson(const tsr_device_info_t &d) {
  return {{"name", field(d.name)},
          {"backend", field(d.backend)},
          {"vendor", field(d.vendor)},
          {"architecture", field(d.architecture)},
          {"total_memory", d.total_memory},
          {"compute_units", d.compute_units},
          {"max_workgroup_size", d.max_workgroup_size},
          {"max_workgroup_total", d.max_workgroup_total},
          {"max_grid_size", d.max_grid_size},
          {"max_shared_memory", d.max_shared_memory},
          {"subgroup_size", d.subgroup_size},
          {"buffer_offset_alignment", d.buffer_offset_alignment},
          {"features", featureNames(d.features)}};
}

} // namespace

int cmdDevices(int argc, char **argv) {
  bool json = false;
  std::vector<std::string> drivers;
  auto app = makeApp("devices", "usage: tessera devices [--json] [--driver PATH.so]...",
                     kDevicesDescription);
  addRepeatable(*app, "--driver", drivers,
                "also load this plugin (a driver and its compiler target; repeatable)")
      ->type_name("PATH.so");
  app->add_flag("--json", json,
                "machine-readable output: {\"devices\":[...],\"unavailable\":[...]}; each\n"
                "device with its target, declared profile and the exact capability\n"
                "record its driver hands the compiler (\"compiler_caps\", docs/hal.md;\n"
                "{} for drivers without one)");
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  RegistrySession session;
  std::string err;
  if (!session.open(&err, drivers)) {
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
    nlohmann::ordered_json doc = {{"devices", nlohmann::ordered_json::array()},
                                  {"unavailable", nlohmann::ordered_json::array()}};
    for (const auto &d : devices)
      doc["devices"].push_back(deviceJson(d, capsJson(session.registry, d)));
    for (const auto &u : unavailable)
      doc["unavailable"].push_back({{"backend", u.backend}, {"reason", u.reason}});
    // A driver's bytes that are not UTF-8 become U+FFFD instead of throwing.
    std::printf("%s\n",
                doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return 0;
  }
  for (const auto &d : devices) {
    std::string feats;
    for (const auto &f : featureNames(d.features))
      feats += (feats.empty() ? "" : " ") + f;
    const Target *t = targetForDevice(d);
    std::string target = t ? std::string(t->name()) + " (declares the " +
                                 precisionProfileName(t->declaredProfile()) + " profile)"
                           : "none (no compiler for this backend)";
    std::printf("%-10s %s %s, %u compute units, %.1f GiB, workgroup <= %u, shared %" PRIu64
                " KiB, subgroup %u\n           features: %s\n           target: %s\n",
                d.name, d.vendor, d.architecture, d.compute_units,
                double(d.total_memory) / (1ull << 30), d.max_workgroup_total,
                d.max_shared_memory / 1024, d.subgroup_size, feats.c_str(), target.c_str());
  }
  if (devices.empty())
    std::printf("no devices\n");
  for (const auto &u : unavailable)
    std::printf("unavailable: %s: %s\n", u.backend, u.reason);
  return 0;
}

} // namespace tessera::cli
