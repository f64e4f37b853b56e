// Shared helpers of the interpreter and launch-data tests: a kernel under construction,
// launch dimensions, typed host buffers and a test-local generator (independent of the
// launch-data generator under test).
#pragma once

#include "ir/core/builder.h"
#include "ir/interp/interpreter.h"

#include <cstring>
#include <string>
#include <vector>

namespace tessera::ir::testutil {

using Vals = std::vector<Value *>;
using Types = std::vector<Type>;

inline const Type kF32 = Type::scalar(Scalar::F32);
inline const Type kI32 = Type::scalar(Scalar::I32);

/// A module with one kernel under construction.
struct KernelBuilder {
  explicit KernelBuilder(const std::string &name = "k") {
    m.filename = "test.tir";
    f = m.addFunction(true, name);
  }
  Value *param(Type t, const std::string &name) { return f->body->addArg(t, name); }
  Builder builder(Loc loc = {}) { return Builder(*f->body, loc); }

  Module m;
  Function *f = nullptr;
};

inline LaunchDims dims1(uint32_t grid, uint32_t wg) {
  LaunchDims d;
  d.grid = {grid, 1, 1};
  d.workgroup = {wg, 1, 1};
  return d;
}
inline KernelArg buf(HostBuffer &b) {
  KernelArg a;
  a.buffer = &b;
  return a;
}
inline KernelArg i32(int32_t v) {
  KernelArg a;
  a.scalar.i = static_cast<uint32_t>(v);
  return a;
}
inline KernelArg f32(float v) {
  KernelArg a;
  a.scalar.f = v;
  return a;
}

inline InterpResult run(const KernelBuilder &k, const LaunchDims &d, std::vector<KernelArg> args,
                 uint32_t subgroupSize = 32, uint64_t maxSteps = 4'000'000'000ull) {
  InterpOptions o;
  o.subgroupSize = subgroupSize;
  o.maxSteps = maxSteps;
  return interpret(k.m, *k.f, d, args, o);
}

/// Test-local deterministic generator (independent of the launch-data generator).
struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
  int range(int lo, int hi) { return lo + static_cast<int>(next() % uint32_t(hi - lo + 1)); }
  float unit() { return static_cast<float>(next() % 2000001) / 1000000.0f - 1.0f; }
};

inline HostBuffer f32Buffer(const std::vector<float> &v) {
  HostBuffer b(Scalar::F32, static_cast<int64_t>(v.size()));
  std::memcpy(b.bytes.data(), v.data(), v.size() * 4);
  return b;
}
inline HostBuffer i32Buffer(const std::vector<int32_t> &v) {
  HostBuffer b(Scalar::I32, static_cast<int64_t>(v.size()));
  std::memcpy(b.bytes.data(), v.data(), v.size() * 4);
  return b;
}
inline float getF32(const HostBuffer &b, int64_t i) {
  float f;
  std::memcpy(&f, b.bytes.data() + i * 4, 4);
  return f;
}
inline int32_t getI32(const HostBuffer &b, int64_t i) {
  int32_t v;
  std::memcpy(&v, b.bytes.data() + i * 4, 4);
  return v;
}

/// saxpy with a bounds check: y[i] = fma(a, x[i], y[i]) for i < n.
inline KernelBuilder saxpy() {
  KernelBuilder k("saxpy");
  Value *x = k.param(Type::buffer(Scalar::F32, Access::ReadOnly), "x");
  Value *y = k.param(Type::buffer(Scalar::F32), "y");
  Value *a = k.param(kF32, "a");
  Value *n = k.param(kI32, "n");
  Builder b = k.builder();
  Value *i = b.workItem(OpKind::GlobalId);
  Value *in = b.cmp(CmpPred::Slt, i, n);
  b.ifOp(in, {}, [&](Builder &t, auto) { t.store(t.fma(a, t.load(x, i), t.load(y, i)), y, i); });
  return k;
}
} // namespace tessera::ir::testutil
