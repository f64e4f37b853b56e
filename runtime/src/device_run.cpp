// Launch-spec runs on a HAL device (judging them is output_check.cpp).
#include "tessera/device_run.h"

#include "ir/interp/numerics.h"
#include "tessera/hal.hpp"

#include <algorithm>
#include <chrono>

namespace tessera {
namespace {

std::string takeMessage(tsr_status_t st) { return hal::Status::fromC(st).message(); }

tsr_arg_t scalarArg(const ir::Type &t, const ir::Literal &lit) {
  switch (t.elem) {
  case ir::Scalar::I1:
  case ir::Scalar::I8:
    return tsr_arg_i8(static_cast<int8_t>(lit.i));
  case ir::Scalar::I16:
    return tsr_arg_i16(static_cast<int16_t>(lit.i));
  case ir::Scalar::I32:
    return tsr_arg_i32(static_cast<int32_t>(lit.i));
  case ir::Scalar::I64:
    return tsr_arg_i64(static_cast<int64_t>(lit.i));
  case ir::Scalar::F16:
    return tsr_arg_f16_bits(ir::numerics::toF16Bits(lit.f));
  case ir::Scalar::BF16:
    return tsr_arg_bf16_bits(ir::numerics::toBF16Bits(lit.f));
  case ir::Scalar::F32:
    return tsr_arg_f32(static_cast<float>(lit.f));
  case ir::Scalar::F64:
    return tsr_arg_f64(lit.f);
  }
  return tsr_arg_i32(0);
}

// Releases HAL handles on every exit path.
struct Handles {
  tsr_stream_t stream = nullptr;
  std::vector<tsr_buffer_t> buffers;
  ~Handles() {
    for (tsr_buffer_t b : buffers)
      tsr_buffer_release(b);
    if (stream)
      tsr_stream_release(stream);
  }
};

} // namespace

bool runOnDevice(tsr_device_t device, const ProgramKernel &kernel, const ir::LaunchData &data,
                 std::vector<ir::HostBuffer> &outputs, double *launchMs, std::string *error,
                 std::optional<uint64_t> timeoutNs) {
  auto fail = [&](const std::string &msg) {
    if (error)
      *error = msg;
    return false;
  };
  if (std::string bad = launchShapeError(kernel, data.dims.workgroup.data()); !bad.empty())
    return fail(bad);
  Handles h;
  if (tsr_status_t st = tsr_stream_create(device, &h.stream))
    return fail(takeMessage(st));
  if (timeoutNs)
    if (tsr_status_t st = tsr_stream_set_timeout(h.stream, *timeoutNs))
      return fail(takeMessage(st));
  for (const ir::HostBuffer &hb : data.buffers) {
    tsr_buffer_t b = nullptr;
    uint64_t size = std::max<uint64_t>(hb.bytes.size(), 1); // the HAL has no empty buffers
    if (tsr_status_t st = tsr_buffer_allocate(device, size, TSR_MEMORY_DEVICE_LOCAL, &b))
      return fail(takeMessage(st));
    h.buffers.push_back(b);
    if (tsr_status_t st = tsr_stream_copy_h2d(h.stream, hb.bytes.data(), b, 0, hb.bytes.size()))
      return fail(takeMessage(st));
  }
  std::vector<tsr_arg_t> args;
  size_t bi = 0;
  for (size_t i = 0; i < kernel.params.size() && i < data.args.size(); ++i) {
    if (kernel.params[i].kind == ir::Type::Kind::Buffer)
      args.push_back(tsr_arg_buffer(h.buffers.at(bi++), 0));
    else
      args.push_back(scalarArg(kernel.params[i], data.args[i].scalar));
  }
  if (tsr_status_t st = tsr_stream_synchronize(h.stream))
    return fail(takeMessage(st));
  auto t0 = std::chrono::steady_clock::now();
  if (tsr_status_t st = tsr_stream_launch(h.stream, kernel.kernel, data.dims.grid.data(),
                                          data.dims.workgroup.data(), args.data(),
                                          static_cast<uint32_t>(args.size())))
    return fail(takeMessage(st));
  if (tsr_status_t st = tsr_stream_synchronize(h.stream))
    return fail(takeMessage(st));
  if (launchMs)
    *launchMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  outputs.clear();
  for (size_t i = 0; i < data.buffers.size(); ++i) {
    ir::HostBuffer out = data.buffers[i];
    if (tsr_status_t st =
            tsr_stream_copy_d2h(h.stream, h.buffers[i], 0, out.bytes.data(), out.bytes.size()))
      return fail(takeMessage(st));
    outputs.push_back(std::move(out));
  }
  if (tsr_status_t st = tsr_stream_synchronize(h.stream))
    return fail(takeMessage(st));
  return true;
}

} // namespace tessera
