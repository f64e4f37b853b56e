// The `tessera._C` module: error translation, the registry and devices, streams and events.
// Buffers (buffer.cpp), kernel programs (program.cpp) and graphs (graph.cpp) bind themselves.
#include "common.h"

#include "backends/builtin_drivers.h"
#include "tessera/graph_exec.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace tessera::py {

void raise(tsr_status_code_t code, const std::string &message) {
  throw Error{tsr_status_code_name(code), message};
}

Runtime &Runtime::get() {
  // Created on first use and never destroyed: drivers may still be referenced by Python
  // objects that die during interpreter shutdown, after static destructors would have run.
  static Runtime *runtime = new Runtime();
  return *runtime;
}

hal::Registry &Runtime::registry() {
  std::lock_guard<std::mutex> lock(mu_);
  if (opened_)
    return registry_;
  registry_ = take(hal::Registry::create());
  if (tsr_status_t st = tsr_registry_register_builtin_drivers(registry_.get())) {
    // Unavailable drivers are recorded in the registry, not errors.
    if (tsr_status_code(st) != TSR_UNAVAILABLE)
      checkC(st);
    tsr_status_free(st);
  }
  check(registry_.loadPlugins());
  opened_ = true;
  return registry_;
}

DevicePtr Runtime::device(const std::string &name) {
  hal::Registry &reg = registry();
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = devices_.find(name); it != devices_.end())
    return it->second;
  auto d = std::make_shared<DeviceObj>();
  d->name = name;
  d->device = take(reg.openDevice(name.c_str()));
  d->info = take(d->device.info());
  d->memoryKind = preferredMemoryKind(d->device.get());
  d->stream = take(d->device.createStream());
  devices_[name] = d;
  return d;
}

namespace {

/// "cpu" for devices that run on the host's cores (the CPU backend, and software Vulkan
/// implementations such as lavapipe and SwiftShader), else "gpu".
std::string deviceKind(const tsr_device_info_t &info) {
  std::string backend = info.backend, arch = info.architecture;
  if (backend == "cpu" || arch.find("llvmpipe") != std::string::npos ||
      arch.find("SwiftShader") != std::string::npos)
    return "cpu";
  return "gpu";
}

struct DeviceInfo {
  std::string name, backend, vendor, architecture, kind;
  uint64_t totalMemory = 0;
  uint32_t computeUnits = 0, subgroupSize = 0, maxWorkgroupSize = 0;
  uint64_t maxSharedMemory = 0;
  std::map<std::string, bool> features;
};

DeviceInfo toInfo(const tsr_device_info_t &i) {
  DeviceInfo d;
  d.name = i.name;
  d.backend = i.backend;
  d.vendor = i.vendor;
  d.architecture = i.architecture;
  d.kind = deviceKind(i);
  d.totalMemory = i.total_memory;
  d.computeUnits = i.compute_units;
  d.subgroupSize = i.subgroup_size;
  d.maxWorkgroupSize = i.max_workgroup_total;
  d.maxSharedMemory = i.max_shared_memory;
  const std::pair<const char *, uint64_t> bits[] = {{"fp16", TSR_FEATURE_FP16},
                                                    {"bf16", TSR_FEATURE_BF16},
                                                    {"fp64", TSR_FEATURE_FP64},
                                                    {"int8", TSR_FEATURE_INT8},
                                                    {"int16", TSR_FEATURE_INT16},
                                                    {"int64", TSR_FEATURE_INT64},
                                                    {"subgroups", TSR_FEATURE_SUBGROUPS},
                                                    {"float_atomics", TSR_FEATURE_FLOAT_ATOMICS},
                                                    {"unified_memory", TSR_FEATURE_UNIFIED_MEMORY}};
  for (auto [name, bit] : bits)
    d.features[name] = (i.features & bit) != 0;
  return d;
}

std::vector<DeviceInfo> listDevices() {
  std::vector<DeviceInfo> out;
  for (const tsr_device_info_t &i : take(Runtime::get().registry().devices()))
    out.push_back(toInfo(i));
  return out;
}

/// The best device here: a GPU of cuda, rocm, levelzero or vulkan (in that order), else
/// cpu:0. Software Vulkan is not better than the CPU backend.
std::string defaultDevice() {
  std::vector<DeviceInfo> all = listDevices();
  for (const char *backend : {"cuda", "rocm", "levelzero", "vulkan"})
    for (const DeviceInfo &d : all)
      if (d.backend == backend && d.kind == "gpu")
        return d.name;
  return "cpu:0";
}

struct Stream {
  DevicePtr device;
  hal::Stream stream;
};
struct Event {
  DevicePtr device;
  hal::Event event;
};

} // namespace

void bindDevices(nb::module_ &m) {
  nb::class_<DeviceInfo>(m, "DeviceInfo")
      .def_ro("name", &DeviceInfo::name)
      .def_ro("backend", &DeviceInfo::backend)
      .def_ro("vendor", &DeviceInfo::vendor)
      .def_ro("architecture", &DeviceInfo::architecture)
      .def_ro("kind", &DeviceInfo::kind)
      .def_ro("total_memory", &DeviceInfo::totalMemory)
      .def_ro("compute_units", &DeviceInfo::computeUnits)
      .def_ro("subgroup_size", &DeviceInfo::subgroupSize)
      .def_ro("max_workgroup_size", &DeviceInfo::maxWorkgroupSize)
      .def_ro("max_shared_memory", &DeviceInfo::maxSharedMemory)
      .def_ro("features", &DeviceInfo::features)
      .def("__repr__", [](const DeviceInfo &d) {
        return "DeviceInfo(" + d.name + ", " + d.kind + ", " + d.vendor + " " + d.architecture +
               ")";
      });
  m.def("devices", &listDevices, "Every device the registry lists.");
  m.def("default_device", &defaultDevice,
        "The best available device: a cuda, rocm, levelzero or non-CPU vulkan GPU, else cpu:0.");

  nb::class_<DeviceObj>(m, "Device")
      .def("__init__",
           [](DeviceObj *self, const std::string &name) {
             new (self) DeviceObj();
             DevicePtr d = Runtime::get().device(name);
             // Python owns a DeviceObj of its own that shares the opened HAL device.
             self->name = d->name;
             self->device = d->device.share();
             self->info = d->info;
             self->memoryKind = d->memoryKind;
             self->stream = d->stream.share();
           })
      .def_ro("name", &DeviceObj::name)
      .def_prop_ro("info", [](const DeviceObj &d) { return toInfo(d.info); })
      .def("__repr__", [](const DeviceObj &d) { return "Device(" + d.name + ")"; })
      .def(
          "synchronize",
          [](DeviceObj &d) {
            nb::gil_scoped_release nogil;
            check(d.stream.synchronize());
          },
          "Waits for the device's default stream.");

  nb::class_<Stream>(m, "Stream")
      .def(
          "__init__",
          [](Stream *self, const std::string &device) {
            DevicePtr d = Runtime::get().device(device);
            new (self) Stream{d, take(d->device.createStream())};
          },
          nb::arg("device") = "cpu:0")
      .def_prop_ro("device", [](const Stream &s) { return s.device->name; })
      .def("synchronize",
           [](Stream &s) {
             nb::gil_scoped_release nogil;
             check(s.stream.synchronize());
           })
      .def("query", [](const Stream &s) { return take(s.stream.query()); })
      .def("record", [](Stream &s, Event &e) { check(s.stream.record(e.event)); })
      .def("wait", [](Stream &s, Event &e) { check(s.stream.wait(e.event)); });

  nb::class_<Event>(m, "Event")
      .def(
          "__init__",
          [](Event *self, const std::string &device) {
            DevicePtr d = Runtime::get().device(device);
            new (self) Event{d, take(d->device.createEvent())};
          },
          nb::arg("device") = "cpu:0")
      .def("synchronize",
           [](Event &e) {
             nb::gil_scoped_release nogil;
             check(e.event.synchronize());
           })
      .def("query", [](const Event &e) { return take(e.event.query()); });
}

/// The HAL stream of a tessera.Stream argument (None: the device's default stream), checked to
/// belong to `device`.
tsr_stream_t streamArg(nb::handle stream, const DevicePtr &device) {
  if (stream.is_none())
    return device->stream.get();
  Stream *s = nullptr;
  if (!nb::try_cast<Stream *>(stream, s) || !s)
    raise(TSR_INVALID_ARGUMENT, "stream must be a tessera.Stream or None");
  if (s->device.get() != device.get())
    raise(TSR_INVALID_ARGUMENT,
          "the stream belongs to " + s->device->name + ", the work to " + device->name);
  return s->stream.get();
}

} // namespace tessera::py

NB_MODULE(_C, m) {
  using namespace tessera::py;
  m.doc() = "Tessera's native module: devices, buffers with DLPack, kernel programs and graphs.";
  // Errors become tessera.TesseraError (defined in Python, tessera/_errors.py, so that it
  // pickles and prints like any Python exception).
  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const Error &e) {
      nb::object cls = nb::module_::import_("tessera._errors").attr("TesseraError");
      nb::object inst = cls(e.code, e.message);
      PyErr_SetObject(cls.ptr(), inst.ptr());
    }
  });
  nb::set_leak_warnings(false); // devices are process-lifetime by design (Runtime::get)
  bindDevices(m);
  bindBuffers(m);
  bindPrograms(m);
  bindGraphs(m);
}
