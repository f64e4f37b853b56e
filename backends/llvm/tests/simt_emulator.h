// An emulator of the SIMT lowering on the CPU, shared by the CUDA and ROCm emulation tests:
// the lowering's LLVM IR (the same as for the GPU, with host hooks) is JIT-compiled for the
// host and run by one thread per lane of one subgroup. Work-item queries and the barrier call
// into the emulator, and every matrix instruction becomes a call to emuMma, which gathers the
// lanes' fragments by the vendor's layout maps (written from the ISA documents, not from the
// codegen's tables), multiplies the tile and hands every lane its part of d. Kernels must
// not use subgroup ops (ballot and shuffle are not emulated).
//
// The reference is a naive loop over small-integer inputs (every sum is exact); bf16 outputs
// are rounded to nearest even as the IR's convert does. One translation unit per test binary
// includes this header (it holds the emulator's state).
#pragma once

#include "backends/llvm/gpu_pipeline.h"
#include "backends/llvm/lowering_impl.h"
#include "backends/llvm/tests/matrix_kernels.h"
#include "backends/llvm/tests/matrix_layout_check.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/TargetSelect.h>

#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

namespace tessera::simtemu {

// ----------------------------------------------------------------------------- the emulator

/// The matrix instructions being emulated and, for each, the vendor's layout maps.
struct Target {
  const std::vector<llvmgen::MatrixInstr> *instrs = nullptr; // null: the portable lowering
  std::vector<layouttest::TileMaps> maps;
};

inline thread_local uint32_t tLane = 0;
inline uint32_t gLanes = 32;
inline std::barrier<> *gBarrier = nullptr;
inline const Target *gTarget = nullptr;

inline int32_t emuQuery(int32_t q, int32_t dim) {
  using Q = llvmgen::SimtTargetHooks::Query;
  switch (static_cast<Q>(q)) {
  case Q::LocalId:
    return dim == 0 ? int32_t(tLane) : 0;
  case Q::LocalSize:
    return dim == 0 ? int32_t(gLanes) : 1;
  case Q::GroupId:
    return 0;
  case Q::NumGroups:
    return 1;
  }
  return 0;
}

inline void emuBarrier() { gBarrier->arrive_and_wait(); }

inline double gA[64][16], gB[64][16], gC[64][8], gD[64][8];

inline double bf16ToDouble(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// One instruction by the whole subgroup: every lane deposits its fragments, lane 0
/// multiplies the tile using the vendor's maps, every lane takes its part of d.
inline void emuMma(int32_t index, const void *a, const void *b, const void *c, void *d) {
  const llvmgen::MatrixInstr &in = gTarget->instrs->at(size_t(index));
  const layouttest::TileMaps &maps = gTarget->maps.at(size_t(index));
  auto elem = [&](const void *p, uint32_t i) -> double {
    switch (in.in) {
    case ir::Scalar::BF16:
      return bf16ToDouble(static_cast<const uint16_t *>(p)[i]);
    case ir::Scalar::F16:
      return double(static_cast<const _Float16 *>(p)[i]);
    default:
      return static_cast<const int8_t *>(p)[i];
    }
  };
  bool isInt = in.acc == ir::Scalar::I32;
  for (uint32_t i = 0; i < in.a.size(); ++i)
    gA[tLane][i] = elem(a, i);
  for (uint32_t i = 0; i < in.b.size(); ++i)
    gB[tLane][i] = elem(b, i);
  for (uint32_t i = 0; i < in.c.size(); ++i)
    gC[tLane][i] = isInt ? static_cast<const int32_t *>(c)[i] : static_cast<const float *>(c)[i];
  gBarrier->arrive_and_wait();
  if (tLane == 0) {
    for (uint32_t i = 0; i < in.m; ++i)
      for (uint32_t j = 0; j < in.n; ++j) {
        auto [cl, cr] = maps.c(i, j)[0];
        double s = gC[cl][cr];
        for (uint32_t k = 0; k < in.k; ++k) {
          auto [al, ar] = maps.a(i, k)[0];
          auto [bl, br] = maps.b(k, j)[0];
          s += gA[al][ar] * gB[bl][br];
        }
        gD[cl][cr] = s;
      }
  }
  gBarrier->arrive_and_wait();
  for (uint32_t i = 0; i < in.c.size(); ++i)
    if (isInt)
      static_cast<int32_t *>(d)[i] = int32_t(gD[tLane][i]);
    else
      static_cast<float *>(d)[i] = float(gD[tLane][i]);
}

/// The host's hooks: queries and barriers call the emulator; a matrix instruction calls
/// emuMma with the fragments in memory.
class HostHooks final : public llvmgen::SimtTargetHooks {
public:
  HostHooks(llvm::Module &m, const std::vector<llvmgen::MatrixInstr> *instrs)
      : m_(m), instrs_(instrs) {}
  llvm::Value *emitMath(llvm::IRBuilder<> &, ir::OpKind, llvm::ArrayRef<llvm::Value *>,
                        std::string &error) override {
    error = "no math in the emulator";
    return nullptr;
  }
  llvm::Value *emitQuery(llvm::IRBuilder<> &b, Query q, unsigned dim) override {
    llvm::FunctionCallee f =
        m_.getOrInsertFunction("emuQuery", b.getInt32Ty(), b.getInt32Ty(), b.getInt32Ty());
    return b.CreateCall(f, {b.getInt32(int32_t(q)), b.getInt32(dim)});
  }
  void emitBarrier(llvm::IRBuilder<> &b) override {
    b.CreateCall(m_.getOrInsertFunction("emuBarrier", b.getVoidTy()));
  }
  llvm::Value *emitBallot(llvm::IRBuilder<> &, llvm::Value *mask, llvm::Value *) override {
    return mask; // the corpus has no subgroup ops
  }
  llvm::Value *emitShuffle(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *v,
                           llvm::Value *) override {
    return v;
  }
  llvm::SyncScope::ID deviceScope(llvm::LLVMContext &) override { return llvm::SyncScope::System; }
  llvm::SyncScope::ID workgroupScope(llvm::LLVMContext &) override {
    return llvm::SyncScope::System;
  }
  void finishKernel(llvm::Function &) override {}
  const std::vector<llvmgen::MatrixInstr> &matrixInstrs() const override {
    static const std::vector<llvmgen::MatrixInstr> none;
    return instrs_ ? *instrs_ : none;
  }
  std::vector<llvm::Value *> emitMatrixInstr(llvm::IRBuilder<> &b, const llvmgen::MatrixInstr &in,
                                             llvm::ArrayRef<llvm::Value *> a,
                                             llvm::ArrayRef<llvm::Value *> bv,
                                             llvm::ArrayRef<llvm::Value *> c) override {
    auto spill = [&](llvm::ArrayRef<llvm::Value *> v) {
      llvm::Value *p = b.CreateAlloca(llvm::ArrayType::get(v[0]->getType(), v.size()));
      for (size_t i = 0; i < v.size(); ++i)
        b.CreateStore(
            v[i], b.CreateConstGEP2_32(llvm::ArrayType::get(v[0]->getType(), v.size()), p, 0, i));
      return p;
    };
    llvm::Type *ct = c[0]->getType();
    llvm::Value *pa = spill(a), *pb = spill(bv), *pc = spill(c);
    llvm::Value *pd = b.CreateAlloca(llvm::ArrayType::get(ct, c.size()));
    llvm::Type *ptr = b.getPtrTy();
    llvm::FunctionCallee f =
        m_.getOrInsertFunction("emuMma", b.getVoidTy(), b.getInt32Ty(), ptr, ptr, ptr, ptr);
    b.CreateCall(f, {b.getInt32(int32_t(&in - &instrs_->front())), pa, pb, pc, pd});
    std::vector<llvm::Value *> d;
    for (size_t i = 0; i < c.size(); ++i)
      d.push_back(b.CreateLoad(
          ct, b.CreateConstGEP2_32(llvm::ArrayType::get(ct, c.size()), pd, 0, unsigned(i))));
    return d;
  }

private:
  llvm::Module &m_;
  const std::vector<llvmgen::MatrixInstr> *instrs_;
};

/// A kernel JIT-compiled for the host (O2, so SROA and friends run as on the GPU).
struct HostKernel {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  void *fn = nullptr;
};

/// `m` lowered with `t`'s instructions (none: the portable lowering) for subgroup size `sg`.
inline HostKernel buildHost(const ir::Module &m, uint32_t sg, const Target &t) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  HostKernel hk;
  auto jit = llvm::orc::LLJITBuilder().create();
  EXPECT_TRUE(bool(jit));
  if (!jit) {
    llvm::consumeError(jit.takeError());
    return hk;
  }
  hk.jit = std::move(*jit);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = std::make_unique<llvm::Module>("emu", *ctx);
  mod->setDataLayout(hk.jit->getDataLayout());
  mod->setTargetTriple(hk.jit->getTargetTriple().str());
  HostHooks hooks(*mod, t.instrs);
  llvmgen::SimtConfig cfg{sg, "emulator", &hooks, t.instrs != nullptr};
  std::vector<llvmgen::LoweredKernel> kernels;
  if (llvm::Error e = llvmgen::lowerModuleSimt(m, *mod, cfg, kernels)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return hk;
  }
  if (llvm::Error e = llvmgen::verifyLowered(*mod)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return hk;
  }
  std::string err;
  auto tm = llvmgen::createTargetMachine(mod->getTargetTriple(), "", "", 2, err);
  EXPECT_TRUE(tm) << err;
  if (tm)
    llvmgen::optimizeModule(*mod, *tm, 2);
  llvm::orc::JITDylib &jd = hk.jit->getMainJITDylib();
  llvm::orc::MangleAndInterner mangle(hk.jit->getExecutionSession(), hk.jit->getDataLayout());
  llvm::orc::SymbolMap syms;
  auto add = [&](const char *name, void *p) {
    syms[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(p), llvm::JITSymbolFlags::Exported};
  };
  add("emuQuery", reinterpret_cast<void *>(&emuQuery));
  add("emuBarrier", reinterpret_cast<void *>(&emuBarrier));
  add("emuMma", reinterpret_cast<void *>(&emuMma));
  llvm::cantFail(jd.define(llvm::orc::absoluteSymbols(std::move(syms))));
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      hk.jit->getDataLayout().getGlobalPrefix());
  if (process)
    jd.addGenerator(std::move(*process));
  else
    llvm::consumeError(process.takeError());
  llvm::cantFail(hk.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))));
  auto addr = hk.jit->lookup(kernels.at(0).symbol);
  EXPECT_TRUE(bool(addr));
  if (!addr) {
    llvm::consumeError(addr.takeError());
    return hk;
  }
  hk.fn = addr->toPtr<void *>();
  return hk;
}

/// Runs `call` on `lanes` threads (one workgroup, one or more subgroups).
inline void runLanes(uint32_t lanes, const std::function<void()> &call) {
  std::barrier<> bar(lanes);
  gBarrier = &bar;
  gLanes = lanes;
  std::vector<std::thread> threads;
  for (uint32_t l = 0; l < lanes; ++l)
    threads.emplace_back([&, l] {
      tLane = l;
      call();
    });
  for (auto &t : threads)
    t.join();
  gBarrier = nullptr;
}

// ----------------------------------------------------------------------------- the cases

inline uint16_t toBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

/// Memory bytes of `v` (a small integer) as element type `t`.
inline void put(std::vector<uint8_t> &mem, size_t i, const std::string &t, double v) {
  if (t == "bf16") {
    uint16_t x = toBF16(float(v));
    std::memcpy(&mem[i * 2], &x, 2);
  } else if (t == "f16") {
    _Float16 x = _Float16(v);
    std::memcpy(&mem[i * 2], &x, 2);
  } else if (t == "f32") {
    float x = float(v);
    std::memcpy(&mem[i * 4], &x, 4);
  } else if (t == "i8") {
    mem[i] = uint8_t(int8_t(v));
  } else {
    int32_t x = int32_t(v);
    std::memcpy(&mem[i * 4], &x, 4);
  }
}

inline size_t bytesOf(const std::string &t) {
  return t == "i8" ? 1 : (t == "bf16" || t == "f16") ? 2 : 4;
}

/// D = out(s * (C + A B)) of matrixKernel(c) on the emulator with `t`'s instructions (run
/// by `sg` lanes), against the naive loop.
inline void runCase(const gputest::MatrixCase &c, uint32_t sg, const Target &t) {
  gTarget = &t;
  bool mma = t.instrs != nullptr;
  ir::ParseResult r = ir::parseModule(gputest::matrixKernel(c), "case.tir", true);
  ASSERT_TRUE(r.module) << (r.diags.empty() ? "" : r.diags[0].str());
  HostKernel hk = buildHost(*r.module, sg, t);
  ASSERT_TRUE(hk.fn);
  // Odd bounds: fewer rows and columns than the matrix, K not a multiple of the step.
  int m = c.m > 8 ? c.m - 3 : c.m - 1, n = c.n - 1, k = 2 * c.k + 5;
  std::string what = gputest::matrixKernelName(c) + (mma ? " instructions sg " : " portable sg ") +
                     std::to_string(sg);
  std::vector<double> A(size_t(m) * k), B(size_t(n) * k), C(size_t(m) * n);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = double(int((i * 5 + i / 7) % 7) - 3);
  for (size_t i = 0; i < B.size(); ++i)
    B[i] = double(int(i * 5 % 9) - 4);
  for (size_t i = 0; i < C.size(); ++i)
    C[i] = double(int(i * 3 % 11) - 5);
  std::vector<uint8_t> bA(A.size() * bytesOf(c.in)), bB(B.size() * bytesOf(c.in)),
      bC(C.size() * bytesOf(c.acc)), bD(C.size() * bytesOf(c.out), 0xAB);
  for (size_t i = 0; i < A.size(); ++i)
    put(bA, i, c.in, A[i]);
  for (size_t i = 0; i < B.size(); ++i)
    put(bB, i, c.in, B[i]);
  for (size_t i = 0; i < C.size(); ++i)
    put(bC, i, c.acc, C[i]);
  for (bool flag : {false, true}) {
    std::fill(bD.begin(), bD.end(), 0xAB);
    if (c.acc == "i32") {
      using Fn =
          void (*)(void *, void *, void *, void *, int32_t, int32_t, int32_t, int32_t, uint8_t);
      runLanes(sg, [&] {
        reinterpret_cast<Fn>(hk.fn)(bA.data(), bB.data(), bC.data(), bD.data(), m, n, k, 3, flag);
      });
    } else {
      using Fn =
          void (*)(void *, void *, void *, void *, int32_t, int32_t, int32_t, float, uint8_t);
      runLanes(sg, [&] {
        reinterpret_cast<Fn>(hk.fn)(bA.data(), bB.data(), bC.data(), bD.data(), m, n, k, 3.0f,
                                    flag);
      });
    }
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double want = C[size_t(i) * n + j];
        for (int kk = 0; kk < k; ++kk) // B is stored column-major: element (kk, j) at j*k + kk
          want += A[size_t(i) * k + kk] * B[size_t(j) * k + kk];
        want = flag ? 1 : 3 * want;
        std::vector<uint8_t> expect(bytesOf(c.out));
        put(expect, 0, c.out, want);
        ASSERT_EQ(
            0, std::memcmp(expect.data(), &bD[(size_t(i) * n + j) * expect.size()], expect.size()))
            << what << (flag ? " (fill)" : "") << ": D[" << i << "][" << j << "], want " << want;
      }
  }
}

/// matrixControlKernel() on `sg` lanes with `t`'s instructions and without.
inline void runWhileShared(uint32_t sg, const Target &t) {
  ir::ParseResult r = ir::parseModule(gputest::matrixControlKernel(), "while.tir", true);
  ASSERT_TRUE(r.module) << (r.diags.empty() ? "" : r.diags[0].str());
  const Target portable;
  for (const Target *tt : {&t, &portable}) {
    gTarget = tt;
    bool mma = tt->instrs != nullptr;
    HostKernel hk = buildHost(*r.module, sg, *tt);
    ASSERT_TRUE(hk.fn);
    std::vector<float> X(256);
    for (size_t i = 0; i < X.size(); ++i)
      X[i] = float(int(i % 13) - 6);
    std::vector<float> in = X;
    using Fn = void (*)(float *, int32_t);
    runLanes(sg, [&] { reinterpret_cast<Fn>(hk.fn)(X.data(), 3); });
    // (u, v) <- (u + v, u) three times from (x, 2): (x + 2, x), (2x + 2, x + 2),
    // (3x + 4, 2x + 2); v is stored transposed.
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j)
        ASSERT_EQ(X[size_t(i) * 16 + j], 2 * in[size_t(j) * 16 + i] + 2)
            << (mma ? "mma" : "portable") << " X[" << i << "][" << j << "]";
  }
}

} // namespace tessera::simtemu
