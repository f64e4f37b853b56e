// What the Kernel flavour emits for a few constructs (read from the disassembly), and the
// errors for what a device or the flavour cannot express.
#include "backends/levelzero/codegen/tests/levelzero_test_util.h"

namespace tessera::levelzero {
namespace {

using testing::compileText;

LevelZeroModule compiled(const std::string &text, const LevelZeroCompileOptions &opts = {}) {
  LevelZeroModule out;
  std::string err;
  EXPECT_TRUE(compileText(text, &out, &err, opts)) << err;
  return out;
}

size_t count(const std::string &text, const std::string &part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

const char *kAxpy =
    R"(kernel @axpy(%x: buffer<f32, readonly>, %y: buffer<f32, readwrite>, %a: f32, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %xv = load %x[%i] : f32
    %yv = load %y[%i] : f32
    %p = mul %a, %xv : f32
    %s = add %p, %yv : f32
    store %s, %y[%i] : f32
  }
}
)";

TEST(LevelZeroConstructs, EntryPointTakesTheAbiParameters) {
  LevelZeroModule m = compiled(kAxpy);
  const std::string &d = m.disassembly;
  EXPECT_CONTAINS(d, "OpEntryPoint Kernel %axpy \"axpy\"");
  // levelzero_abi.h: 2 buffers x (pointer, offset, bytes) + 2 scalars + 3 sizes + control.
  EXPECT_EQ(count(d, "OpFunctionParameter"), 2u * 3 + 2 + 3 + 1);
  EXPECT_CONTAINS(d, "%x = OpFunctionParameter %_ptr_CrossWorkgroup_uchar");
  EXPECT_CONTAINS(d, "%x_offset = OpFunctionParameter %ulong");
  EXPECT_CONTAINS(d, "%y_bytes = OpFunctionParameter %ulong");
  EXPECT_CONTAINS(d, "%a = OpFunctionParameter %float");
  EXPECT_CONTAINS(d, "%n = OpFunctionParameter %uint");
  EXPECT_CONTAINS(d, "%local_size_z = OpFunctionParameter %uint");
  EXPECT_CONTAINS(d, "%tsr_control = OpFunctionParameter %_ptr_CrossWorkgroup_uint");
  EXPECT_CONTAINS(d, "OpInBoundsPtrAccessChain");
  EXPECT_CONTAINS(d, "OpMemoryModel Physical64 OpenCL");
  for (const char *cap : {"Addresses", "Kernel", "Int64", "Int8"})
    EXPECT_CONTAINS(d, std::string("OpCapability ") + cap + "\n");
  EXPECT_EQ(d.find("OpCapability Shader"), std::string::npos);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].params.size(), 4u);
  EXPECT_EQ(m.words[1], 0x00010200u) << "SPIR-V 1.2";
}

TEST(LevelZeroConstructs, ContractionOffInsteadOfNoContraction) {
  const std::string &d = compiled(kAxpy).disassembly;
  EXPECT_CONTAINS(d, "OpExecutionMode %axpy ContractionOff");
  EXPECT_EQ(d.find("NoContraction"), std::string::npos);
  EXPECT_EQ(d.find("SubgroupSize"), std::string::npos) << "no subgroup op, no required size";
}

TEST(LevelZeroConstructs, MathUsesOpenCLStd) {
  const std::string &d = compiled(R"(kernel @m(%x: buffer<f32, readwrite>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %e = exp %v : f32
  %r = round %e : f32
  %f = fma %r, %v, %e : f32
  store %f, %x[%i] : f32
}
)")
                             .disassembly;
  EXPECT_CONTAINS(d, "OpExtInstImport \"OpenCL.std\"");
  EXPECT_CONTAINS(d, " exp %v\n");
  // The IR's round is half to even: rint, not OpenCL's round (half away from zero).
  EXPECT_CONTAINS(d, " rint %e\n");
  EXPECT_EQ(d.find(" round "), std::string::npos);
  EXPECT_CONTAINS(d, " fma %r %v %e\n");
  EXPECT_EQ(d.find("native_"), std::string::npos);
}

TEST(LevelZeroConstructs, BarrierIsOpenCLs) {
  const std::string &d = compiled(R"(kernel @b(%x: buffer<f32, readwrite>) {
  %s = shared_alloc : shared<f32, 64>
  %l = local_id.x : i32
  %v = load %x[%l] : f32
  store %v, %s[%l] : f32
  barrier
  %w = load %s[%l] : f32
  store %w, %x[%l] : f32
}
)")
                             .disassembly;
  // Workgroup execution and memory scope (2), semantics SequentiallyConsistent |
  // WorkgroupMemory | CrossWorkgroupMemory = 0x10 | 0x100 | 0x200 = 784.
  EXPECT_CONTAINS(d, "%uint_784 = OpConstant %uint 784");
  EXPECT_CONTAINS(d, "OpControlBarrier %uint_2 %uint_2 %uint_784");
  EXPECT_CONTAINS(d, "OpVariable %_ptr_Workgroup__arr_float_uint_64 Workgroup");
}

TEST(LevelZeroConstructs, SubgroupOpsAreGroupAndIntelShuffles) {
  const std::string &d =
      compiled(R"(kernel @s(%x: buffer<f32, readwrite>, %k: buffer<i32, readwrite>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %r = subgroup_max %v : f32
  %c = const 1 : i32
  %sh = shuffle_xor %r, %c : f32
  store %sh, %x[%i] : f32
  %n = load %k[%i] : i32
  %t = subgroup_add %n : i32
  store %t, %k[%i] : i32
}
)")
          .disassembly;
  EXPECT_CONTAINS(d, "OpCapability Groups");
  EXPECT_CONTAINS(d, "OpCapability SubgroupShuffleINTEL");
  EXPECT_CONTAINS(d, "OpExtension \"SPV_INTEL_subgroups\"");
  EXPECT_CONTAINS(d, "OpGroupFMax %float %uint_3 Reduce");
  EXPECT_CONTAINS(d, "OpGroupIAdd %uint %uint_3 Reduce");
  EXPECT_CONTAINS(d, "OpSubgroupShuffleXorINTEL %float");
  EXPECT_EQ(d.find("GroupNonUniform"), std::string::npos);
  // The lowering's subgroup size is required of the device (not left to its compiler).
  EXPECT_CONTAINS(d, "OpExecutionMode %s SubgroupSize 16");
  EXPECT_CONTAINS(d, "OpCapability SubgroupDispatch");
}

TEST(LevelZeroConstructs, FloatAtomicAddIsACompareExchangeLoop) {
  const std::string &d = compiled(R"(kernel @a(%x: buffer<f32, readwrite>) {
  %z = const 0 : i32
  %one = const 1.0 : f32
  %o = atomic_add %x[%z], %one : f32
}
)")
                             .disassembly;
  EXPECT_CONTAINS(d, "OpAtomicCompareExchange");
  EXPECT_CONTAINS(d, "OpLoopMerge");
  EXPECT_EQ(d.find("AtomicFAddEXT"), std::string::npos);
}

TEST(LevelZeroErrors, DeviceWithoutFp64) {
  LevelZeroCompileOptions opts;
  opts.caps.fp64 = false;
  LevelZeroModule out;
  std::string err;
  EXPECT_FALSE(compileText(R"(kernel @d(%x: buffer<f64, readwrite>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f64
  store %v, %x[%i] : f64
}
)",
                           &out, &err, opts));
  EXPECT_CONTAINS(err, "test.tir:");
  EXPECT_CONTAINS(err, "needs 64-bit floats (levelzero.fp64), which the target lacks");
}

TEST(LevelZeroErrors, DeviceWithoutInt64Atomics) {
  LevelZeroCompileOptions opts;
  opts.caps.int64Atomics = false;
  LevelZeroModule out;
  std::string err;
  EXPECT_FALSE(compileText(R"(kernel @a(%x: buffer<i64, readwrite>) {
  %z = const 0 : i32
  %one = const 1 : i64
  %o = atomic_add %x[%z], %one : i64
}
)",
                           &out, &err, opts));
  EXPECT_CONTAINS(err, "test.tir:4:");
  EXPECT_CONTAINS(err, "64-bit atomics on i64 buffers (levelzero.int64Atomics)");
}

TEST(LevelZeroErrors, UnsupportedAtomicType) {
  LevelZeroModule out;
  std::string err;
  EXPECT_FALSE(compileText(R"(kernel @a(%x: buffer<f64, readwrite>) {
  %z = const 0 : i32
  %one = const 1.0 : f64
  %o = atomic_add %x[%z], %one : f64
}
)",
                           &out, &err));
  EXPECT_CONTAINS(err, "test.tir:4:3: error: atomic_add on f64 is not supported");
}

TEST(LevelZeroErrors, SharedMemoryOverTheDeviceLimit) {
  LevelZeroCompileOptions opts;
  opts.caps.maxSharedBytes = 1024;
  LevelZeroModule out;
  std::string err;
  EXPECT_FALSE(compileText(R"(kernel @s(%x: buffer<f32, readwrite>) {
  %s = shared_alloc : shared<f32, 1024>
}
)",
                           &out, &err, opts));
  EXPECT_CONTAINS(err, "needs 4096 bytes of shared memory; the target allows 1024 "
                       "(levelzero.maxSharedBytes)");
}

TEST(LevelZeroCaps, RecordKeysAndErrors) {
  LevelZeroCaps c;
  std::string err;
  EXPECT_TRUE(c.set("fp16", "0", &err));
  EXPECT_TRUE(c.set("subgroupSize", "32", &err));
  EXPECT_EQ(c.describe(), "fp64=1 fp16=0 int64Atomics=1 subgroupSize=32 maxSharedBytes=65536");
  EXPECT_FALSE(c.set("fp16", "2", &err));
  EXPECT_CONTAINS(err, "levelzero capability fp16 has the value '2' (expected 0 or 1)");
  EXPECT_FALSE(c.set("subgroupSize", "0", &err));
  EXPECT_CONTAINS(err, "(expected 1 to 128)");
  EXPECT_FALSE(c.set("warpSize", "32", &err));
  EXPECT_CONTAINS(err, "unknown levelzero capability 'warpSize'");
  EXPECT_EQ(c.lowering().subgroupSize, 32u);
  EXPECT_TRUE(c.lowering().float16); // f16 is emulated on the bits: no device support needed
  EXPECT_TRUE(c.lowering().cooperativeMatrix.empty());
}

} // namespace
} // namespace tessera::levelzero
