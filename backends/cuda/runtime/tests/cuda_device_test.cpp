// The CUDA driver through the HAL, twice: on the fake libcuda (always; it checks that every
// call has a context current and that everything is released) and on the system's CUDA
// (skipped when it is unavailable, so a machine with an NVIDIA GPU runs the real thing):
// copies, fills, host-visible memory, events across streams, launches of hand-written PTX
// (vector add, every scalar kind), the cubin path and its PTX fallback, JIT errors, out of
// memory, and concurrent use from several threads. Expected values are computed here.
#include "backends/cuda/runtime/tests/cuda_test_support.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>

namespace tessera::cuda::testing {
namespace {

enum class Library { Fake, System };
void PrintTo(Library library, std::ostream *os) {
  *os << (library == Library::Fake ? "the fake libcuda" : "the system's libcuda");
}

std::vector<uint8_t> bytePattern(size_t n, unsigned seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i)
    bytes[i] = uint8_t((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return bytes;
}

class CudaDevice : public ::testing::TestWithParam<Library> {
protected:
  bool fake() const { return GetParam() == Library::Fake; }

  void SetUp() override {
    std::unique_ptr<UseFakeCuda> useFake;
    if (fake())
      useFake = std::make_unique<UseFakeCuda>("deferred"); // work runs later, as on a GPU
    tsr_status_t status = nullptr;
    registry_ = registryWithCuda(&status);
    if (tsr_status_code(status) == TSR_UNAVAILABLE && !fake()) {
      std::string reason = tsr_status_message(status);
      tsr_status_free(status);
      GTEST_SKIP() << "no CUDA device: " << reason;
    }
    TSR_ASSERT_OK(status);
    TSR_ASSERT_OK(tsr_registry_open_device(registry_, "cuda:0", &device_));
    info_.struct_size = sizeof(info_);
    TSR_ASSERT_OK(tsr_device_info(device_, &info_));
    stream_ = newStream();
  }

  void TearDown() override {
    for (tsr_kernel_t k : kernels_)
      tsr_kernel_release(k);
    for (tsr_executable_t e : executables_)
      tsr_executable_release(e);
    for (tsr_buffer_t b : buffers_)
      tsr_buffer_release(b);
    for (tsr_event_t e : events_)
      tsr_event_release(e);
    for (tsr_stream_t s : streams_)
      tsr_stream_release(s);
    tsr_device_release(device_);
    tsr_registry_release(registry_);
    if (!fake() || !device_)
      return;
    EXPECT_EQ(fakeCounter("fake_cuda_live_objects"), 0) << "a CUDA object was not released";
    EXPECT_EQ(fakeCounter("fake_cuda_primary_retains"), 0) << "the primary context is retained";
  }

  tsr_stream_t newStream() {
    tsr_stream_t stream = nullptr;
    TSR_EXPECT_OK(tsr_stream_create(device_, &stream));
    streams_.push_back(stream);
    return stream;
  }
  tsr_event_t newEvent() {
    tsr_event_t event = nullptr;
    TSR_EXPECT_OK(tsr_event_create(device_, &event));
    events_.push_back(event);
    return event;
  }
  tsr_buffer_t allocate(uint64_t size, tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL) {
    tsr_buffer_t buffer = nullptr;
    TSR_EXPECT_OK(tsr_buffer_allocate(device_, size, kind, &buffer));
    buffers_.push_back(buffer);
    return buffer;
  }
  tsr_executable_t load(TestModule &module) {
    tsr_executable_t executable = nullptr;
    TSR_EXPECT_OK(tsr_executable_create(device_, TSR_CUDA_FORMAT, &module.module(),
                                        sizeof(tsr_gpu_module), &executable));
    executables_.push_back(executable);
    return executable;
  }
  tsr_kernel_t kernel(tsr_executable_t executable, const char *name) {
    tsr_kernel_t k = nullptr;
    TSR_EXPECT_OK(tsr_executable_kernel(executable, name, &k));
    kernels_.push_back(k);
    return k;
  }
  template <typename T>
  std::vector<T> read(tsr_buffer_t buffer, size_t count, uint64_t offset = 0) {
    std::vector<T> values(count);
    TSR_EXPECT_OK(tsr_stream_copy_d2h(stream_, buffer, offset, values.data(), count * sizeof(T)));
    TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
    return values;
  }
  template <typename T> void write(tsr_buffer_t buffer, const std::vector<T> &values) {
    TSR_EXPECT_OK(
        tsr_stream_copy_h2d(stream_, values.data(), buffer, 0, values.size() * sizeof(T)));
    TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  }
  /// c = a + b over n floats through vector_add, buffers at the given byte offsets.
  void checkVectorAdd(tsr_kernel_t add, int n, uint32_t workgroup, uint64_t offset);

  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  tsr_device_info_t info_ = {};

private:
  std::vector<tsr_stream_t> streams_;
  std::vector<tsr_event_t> events_;
  std::vector<tsr_buffer_t> buffers_;
  std::vector<tsr_executable_t> executables_;
  std::vector<tsr_kernel_t> kernels_;
};

void CudaDevice::checkVectorAdd(tsr_kernel_t add, int n, uint32_t workgroup, uint64_t offset) {
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * float(i);
    b[i] = 1000.0f - float(i);
  }
  uint64_t bytes = uint64_t(n) * 4 + offset;
  tsr_buffer_t ba = allocate(bytes), bb = allocate(bytes), bc = allocate(bytes);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, a.data(), ba, offset, uint64_t(n) * 4));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, b.data(), bb, offset, uint64_t(n) * 4));
  const uint32_t fillPattern = 0xDEADBEEF;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, bc, 0, bytes, &fillPattern, 4));
  tsr_arg_t args[] = {tsr_arg_buffer(ba, offset), tsr_arg_buffer(bb, offset),
                      tsr_arg_buffer(bc, offset), tsr_arg_i32(n)};
  uint32_t grid[3] = {(uint32_t(n) + workgroup - 1) / workgroup, 1, 1};
  uint32_t wg[3] = {workgroup, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, add, grid, wg, args, 4));
  std::vector<float> c = read<float>(bc, size_t(n), offset);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << "element " << i;
}

TEST_P(CudaDevice, DescribesAnNvidiaGpu) {
  EXPECT_STREQ(info_.name, "cuda:0");
  EXPECT_STREQ(info_.vendor, "NVIDIA");
  EXPECT_EQ(std::string(info_.architecture).rfind("sm_", 0), 0u) << info_.architecture;
  EXPECT_GT(info_.total_memory, 0u);
  EXPECT_GT(info_.compute_units, 0u);
  EXPECT_EQ(info_.subgroup_size, 32u);
  EXPECT_EQ(info_.max_workgroup_total, 1024u);
  EXPECT_EQ(info_.buffer_offset_alignment, 256u);
  EXPECT_GE(info_.max_shared_memory, 48u * 1024);
}

TEST_P(CudaDevice, CopyRoundTripWithOffsets) {
  const size_t n = 1 << 20;
  std::vector<uint8_t> in = bytePattern(n, 1);
  tsr_buffer_t a = allocate(n), b = allocate(n);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, in.data(), a, 0, n));
  EXPECT_EQ(read<uint8_t>(a, n), in);
  std::vector<uint8_t> zeros(n, 0);
  write(b, zeros);
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, a, 101, b, 7, 333333));
  std::vector<uint8_t> expected = zeros;
  std::memcpy(expected.data() + 7, in.data() + 101, 333333);
  EXPECT_EQ(read<uint8_t>(b, n), expected);
  EXPECT_EQ(read<uint8_t>(a, 1000, 12345),
            std::vector<uint8_t>(in.begin() + 12345, in.begin() + 13345));
}

TEST_P(CudaDevice, FillsWithEachPatternSize) {
  tsr_buffer_t buffer = allocate(4096);
  std::vector<uint8_t> expected(4096, 0);
  write(buffer, expected);
  const uint32_t pattern = 0x11223344; // host byte order, as memcpy'd
  const struct {
    uint32_t size;
    uint64_t offset, length;
  } fills[] = {{1, 3, 100}, {2, 202, 400}, {4, 1024, 2048}};
  for (const auto &f : fills) {
    TSR_ASSERT_OK(tsr_stream_fill(stream_, buffer, f.offset, f.length, &pattern, f.size));
    for (uint64_t i = 0; i < f.length; ++i)
      expected[f.offset + i] = reinterpret_cast<const uint8_t *>(&pattern)[i % f.size];
  }
  EXPECT_EQ(read<uint8_t>(buffer, 4096), expected);
}

TEST_P(CudaDevice, HostVisibleMemoryMapsAndCopies) {
  const size_t n = 64 << 10;
  tsr_buffer_t visible = allocate(n, TSR_MEMORY_HOST_VISIBLE);
  tsr_buffer_t local = allocate(n);
  void *mapped = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(visible, 0, n, &mapped));
  ASSERT_NE(mapped, nullptr);
  std::vector<uint8_t> in = bytePattern(n, 5);
  std::memcpy(mapped, in.data(), n);
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, visible, 0, local, 0, n));
  EXPECT_EQ(read<uint8_t>(local, n), in);
  // And back: the device writes what the host then sees through the mapping.
  const uint32_t pattern = 0x5A;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, visible, 0, n, &pattern, 1));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  EXPECT_EQ(static_cast<uint8_t *>(mapped)[n - 1], 0x5A);
  TSR_ASSERT_OK(tsr_buffer_unmap(visible));
  // Device-local memory is not host-visible: the HAL refuses to map it.
  TSR_EXPECT_ERROR(tsr_buffer_map(local, 0, n, &mapped), TSR_FAILED_PRECONDITION, "");
}

TEST_P(CudaDevice, EventsOrderTwoStreams) {
  const size_t n = 4 << 20;
  std::vector<uint8_t> in = bytePattern(n, 7);
  tsr_buffer_t a = allocate(n), b = allocate(n);
  tsr_stream_t other = newStream();
  tsr_event_t event = newEvent();
  bool ready = false;
  TSR_ASSERT_OK(tsr_event_query(event, &ready)); // never recorded: complete
  EXPECT_TRUE(ready);
  TSR_ASSERT_OK(tsr_event_synchronize(event));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, in.data(), a, 0, n));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, event));
  TSR_ASSERT_OK(tsr_stream_wait_event(other, event));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(other, a, 0, b, 0, n));
  std::vector<uint8_t> out(n);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(other, b, 0, out.data(), n));
  TSR_ASSERT_OK(tsr_stream_synchronize(other));
  EXPECT_EQ(out, in);
  TSR_ASSERT_OK(tsr_event_synchronize(event));
  TSR_ASSERT_OK(tsr_event_query(event, &ready));
  EXPECT_TRUE(ready);
  bool idle = false;
  TSR_ASSERT_OK(tsr_stream_query(other, &idle));
  EXPECT_TRUE(idle);
}

// A host-to-device copy reads its source in stream order: after an earlier device-to-host
// copy into that memory has landed, on the same stream or on one waited for through an event.
// (The vendor's copy from pageable memory reads it at the call: the first real-GPU run of
// the HAL CTS found the second copy reading zeros.)
TEST_P(CudaDevice, HostToDeviceReadsHostMemoryInStreamOrder) {
  const size_t n = 1 << 16;
  std::vector<uint8_t> in = bytePattern(n, 3);
  tsr_buffer_t a = allocate(n), b = allocate(n), c = allocate(n);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, in.data(), a, 0, n));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  std::vector<uint8_t> host(n, 0);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, a, 0, host.data(), n));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, host.data(), b, 0, n));
  EXPECT_EQ(read<uint8_t>(b, n), in) << "one stream";

  std::vector<uint8_t> host2(n, 0);
  tsr_stream_t other = newStream();
  tsr_event_t event = newEvent();
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, a, 0, host2.data(), n));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, event));
  TSR_ASSERT_OK(tsr_stream_wait_event(other, event));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(other, host2.data(), c, 0, n));
  TSR_ASSERT_OK(tsr_stream_synchronize(other));
  EXPECT_EQ(read<uint8_t>(c, n), in) << "through an event";
}

TEST_P(CudaDevice, LaunchesPtxVectorAdd) {
  TestModule module;
  tsr_executable_t executable = load(module);
  tsr_kernel_t add = kernel(executable, "vector_add");
  tsr_kernel_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_kernel_info(add, &info));
  EXPECT_STREQ(info.name, "vector_add");
  ASSERT_EQ(info.param_count, 4u);
  EXPECT_STREQ(info.params[3].name, "n");
  checkVectorAdd(add, 1000, 128, 0);     // n not a multiple of the workgroup
  checkVectorAdd(add, 100000, 256, 512); // views at an aligned offset
}

TEST_P(CudaDevice, PassesEveryScalarKindByValue) {
  TestModule module;
  tsr_kernel_t store = kernel(load(module), "store_params");
  tsr_buffer_t out = allocate(32);
  std::vector<uint8_t> zeros(32, 0);
  write(out, zeros);
  tsr_arg_t args[] = {tsr_arg_buffer(out, 0),
                      tsr_arg_i8(-5),
                      tsr_arg_i16(-30000),
                      tsr_arg_i32(-2000000000),
                      tsr_arg_i64(-(int64_t(1) << 40) - 3),
                      tsr_arg_f16_bits(0x3C00),
                      tsr_arg_bf16_bits(0xC0A0),
                      tsr_arg_f32(3.25f),
                      tsr_arg_f64(-1.0 / 3.0)};
  uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, store, one, one, args, 9));
  std::vector<uint8_t> bytes = read<uint8_t>(out, 32);
  auto at = [&](auto value, size_t offset) {
    decltype(value) got;
    std::memcpy(&got, bytes.data() + offset, sizeof(got));
    return got == value;
  };
  EXPECT_TRUE(at(int8_t(-5), 0));
  EXPECT_TRUE(at(int16_t(-30000), 2));
  EXPECT_TRUE(at(int32_t(-2000000000), 4));
  EXPECT_TRUE(at(int64_t(-(int64_t(1) << 40) - 3), 8));
  EXPECT_TRUE(at(uint16_t(0x3C00), 16));
  EXPECT_TRUE(at(uint16_t(0xC0A0), 18));
  EXPECT_TRUE(at(3.25f, 20));
  EXPECT_TRUE(at(-1.0 / 3.0, 24));
}

TEST_P(CudaDevice, LoadsTheCubinWhenThereIsOne) {
  std::string cubin = readText(TSR_TEST_CUBIN_PATH);
  if (cubin.empty())
    GTEST_SKIP() << "no cubin of the test kernels (ptxas was not found at build time)";
  // The fake never loads a cubin: it proves the fallback instead; a GPU other than sm_90
  // rejects this one (CUDA_ERROR_NO_BINARY_FOR_GPU) and falls back too.
  TestModule module(std::vector<unsigned char>(cubin.begin(), cubin.end()));
  checkVectorAdd(kernel(load(module), "vector_add"), 4096, 256, 0);
}

TEST_P(CudaDevice, CubinThatDoesNotLoadFallsBackToPtx) {
  // A whole ELF64 header (so the real loader reads nothing past the image), for machine 0
  // rather than EM_CUDA, with no sections: a cubin that cannot load.
  std::vector<unsigned char> notACubin(256, 0);
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(notACubin.data(), ident, sizeof ident);
  TestModule module(notACubin);
  checkVectorAdd(kernel(load(module), "vector_add"), 777, 64, 0);
}

TEST_P(CudaDevice, PtxErrorsCarryTheJitLog) {
  TestModule module({}, ".version 7.0\n.target sm_50\n.address_size 64\nbad_ptx here\n"
                        ".visible .entry vector_add() { ret; }\n");
  tsr_executable_t executable = nullptr;
  tsr_status_t status = tsr_executable_create(device_, TSR_CUDA_FORMAT, &module.module(),
                                              sizeof(tsr_gpu_module), &executable);
  ASSERT_EQ(tsr_status_code(status), TSR_INVALID_ARGUMENT) << tsr_status_message(status);
  std::string message = tsr_status_message(status);
  tsr_status_free(status);
  EXPECT_NE(message.find("cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX"), std::string::npos)
      << message;
  EXPECT_NE(message.find("[PTX JIT log: ptxas"), std::string::npos) << message;
}

TEST_P(CudaDevice, ModuleErrorsAreInvalidArguments) {
  TestModule module;
  tsr_executable_t executable = nullptr;
  TSR_EXPECT_ERROR(
      tsr_executable_create(device_, "ptx", &module.module(), sizeof(tsr_gpu_module), &executable),
      TSR_UNIMPLEMENTED, "executable format 'ptx' is not supported (accepted: cuda)");
  TSR_EXPECT_ERROR(
      tsr_executable_create(device_, TSR_CUDA_FORMAT, &module.module(), 8, &executable),
      TSR_INVALID_ARGUMENT, "smaller than a tsr_gpu_module");
  tsr_gpu_kernel missing = {"not_in_the_ptx", nullptr, 0, nullptr, 0, 0};
  module.module().kernels = &missing;
  module.module().kernel_count = 1;
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_CUDA_FORMAT, &module.module(),
                                         sizeof(tsr_gpu_module), &executable),
                   TSR_INVALID_ARGUMENT, "kernel 'not_in_the_ptx' is not in the module's code");
  module.module().fallback = nullptr;
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_CUDA_FORMAT, &module.module(),
                                         sizeof(tsr_gpu_module), &executable),
                   TSR_INVALID_ARGUMENT, "neither an image nor PTX");
}

TEST_P(CudaDevice, OutOfMemoryIsResourceExhausted) {
  // All of the device's memory never fits (the context itself holds some).
  tsr_buffer_t buffer = nullptr;
  TSR_EXPECT_ERROR(
      tsr_buffer_allocate(device_, info_.total_memory, TSR_MEMORY_DEVICE_LOCAL, &buffer),
      TSR_RESOURCE_EXHAUSTED, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY");
}

TEST_P(CudaDevice, ThreadsWithoutAContextShareTheDevice) {
  // Each thread has its own stream and never made a context current itself: the driver must.
  TestModule module;
  tsr_kernel_t add = kernel(load(module), "vector_add");
  const int threads = 4, n = 50000;
  std::vector<std::thread> workers;
  std::vector<int> mismatches(threads, -1);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto ok = [](tsr_status_t status) {
        return ::tessera::hal::testing::consume(status).empty();
      };
      tsr_stream_t stream = nullptr;
      tsr_buffer_t a = nullptr, c = nullptr;
      std::vector<float> in(n), out(n);
      std::iota(in.begin(), in.end(), float(t));
      bool good = ok(tsr_stream_create(device_, &stream)) &&
                  ok(tsr_buffer_allocate(device_, n * 4, TSR_MEMORY_DEVICE_LOCAL, &a)) &&
                  ok(tsr_buffer_allocate(device_, n * 4, TSR_MEMORY_DEVICE_LOCAL, &c));
      for (int round = 0; good && round < 5; ++round) {
        tsr_arg_t args[] = {tsr_arg_buffer(a, 0), tsr_arg_buffer(a, 0), tsr_arg_buffer(c, 0),
                            tsr_arg_i32(n)};
        uint32_t grid[3] = {(n + 255) / 256, 1, 1}, wg[3] = {256, 1, 1};
        good = ok(tsr_stream_copy_h2d(stream, in.data(), a, 0, n * 4)) &&
               ok(tsr_stream_launch(stream, add, grid, wg, args, 4)) &&
               ok(tsr_stream_copy_d2h(stream, c, 0, out.data(), n * 4)) &&
               ok(tsr_stream_synchronize(stream));
      }
      if (good) { // else mismatches[t] stays -1
        mismatches[t] = 0;
        for (int i = 0; i < n; ++i)
          mismatches[t] += out[i] != 2 * in[i];
      }
      tsr_buffer_release(a);
      tsr_buffer_release(c);
      tsr_stream_release(stream);
    });
  }
  for (std::thread &w : workers)
    w.join();
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  if (fake())
    EXPECT_EQ(fakeCounter("fake_cuda_context_depth"), 0) << "a context was left pushed";
}

INSTANTIATE_TEST_SUITE_P(Libraries, CudaDevice, ::testing::Values(Library::Fake, Library::System),
                         [](const ::testing::TestParamInfo<Library> &info) {
                           return info.param == Library::Fake ? "FakeLibcuda" : "SystemCuda";
                         });

} // namespace
} // namespace tessera::cuda::testing
