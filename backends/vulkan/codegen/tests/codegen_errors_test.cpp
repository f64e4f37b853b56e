// Bad input and missing device features give a clear, located error (never an invalid
// module): one test per kind, asserting the message text.
#include "backends/vulkan/codegen/tests/codegen_test_util.h"
#include "ir/core/builder.h"

namespace tessera::vulkan {
namespace {

using testing::compileError;

constexpr const char *kF64Add = R"(kernel @k(%x: buffer<f64>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f64
  %r = add %v, %v : f64
  store %r, %x[%i] : f64
}
)";

TEST(VulkanErrors, MissingFloat64) {
  VulkanTargetCaps caps;
  caps.float64 = false;
  std::string err = compileError(kF64Add, caps);
  EXPECT_CONTAINS(err, ("test.tir:3:"));
  EXPECT_CONTAINS(err,
                  ("error: 'load' needs 64-bit floats (caps.float64), which the target lacks"));
}

TEST(VulkanErrors, MissingInt64ForScalarParameter) {
  VulkanTargetCaps caps;
  caps.int64 = false;
  std::string err = compileError("kernel @k(%x: buffer<i32>, %n: i64) {\n}\n", caps);
  EXPECT_CONTAINS(err, ("test.tir:1:1: error: kernel @k: the kernel needs 64-bit integers "
                        "(caps.int64), which the target lacks"));
}

TEST(VulkanErrors, Missing8BitStorage) {
  VulkanTargetCaps caps;
  caps.storageBuffer8BitAccess = false;
  std::string err = compileError(R"(kernel @k(%x: buffer<i8>) {
  %i = global_id.x : i32
  %v = load %x[%i] : i8
}
)",
                                 caps);
  EXPECT_CONTAINS(err, ("test.tir:3:"));
  EXPECT_CONTAINS(err, ("'load' needs 8-bit storage buffer access for i8 "
                        "(caps.storageBuffer8BitAccess), which the target lacks"));
}

TEST(VulkanErrors, MissingSubgroupArithmetic) {
  VulkanTargetCaps caps;
  caps.subgroupArithmetic = false;
  std::string err = compileError(R"(kernel @k(%x: buffer<f32>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %s = subgroup_add %v : f32
  store %s, %x[%i] : f32
}
)",
                                 caps);
  EXPECT_CONTAINS(err, ("test.tir:4:"));
  EXPECT_CONTAINS(err, ("'subgroup_add' needs subgroup arithmetic (caps.subgroupArithmetic)"));
}

TEST(VulkanErrors, TooManyPushConstants) {
  std::string params;
  for (int i = 0; i < 33; ++i)
    params += ", %p" + std::to_string(i) + ": i32";
  std::string err = compileError("kernel @k(%x: buffer<i32>" + params + ") {\n}\n");
  EXPECT_CONTAINS(err, ("kernel @k: the scalar parameters need 132 bytes of push constants; "
                        "the target allows 128 (caps.maxPushConstantsSize)"));
}

TEST(VulkanErrors, TooMuchSharedMemory) {
  std::string err = compileError(R"(kernel @k(%x: buffer<f32>) {
  %s = shared_alloc : shared<f32, 9000>
}
)");
  EXPECT_CONTAINS(err, ("test.tir:2:"));
  EXPECT_CONTAINS(err, ("the kernel needs 36000 bytes of shared memory; the target allows "
                        "32768 (caps.maxComputeSharedMemorySize)"));
}

TEST(VulkanErrors, FloatAtomicAddWithoutFeature) {
  VulkanTargetCaps caps;
  caps.shaderBufferFloat32AtomicAdd = false;
  std::string err = compileError(R"(kernel @k(%x: buffer<f32>) {
  %i = global_id.x : i32
  %one = const 1.0 : f32
  %old = atomic_add %x[%i], %one : f32
}
)",
                                 caps);
  EXPECT_CONTAINS(err, ("test.tir:4:"));
  EXPECT_CONTAINS(err, ("'atomic_add' needs float atomic add on f32 buffers "
                        "(caps.shaderBufferFloat32AtomicAdd), which the target lacks"));
}

TEST(VulkanErrors, SharedInt64AtomicWithoutFeature) {
  VulkanTargetCaps caps;
  caps.shaderSharedInt64Atomics = false;
  std::string err = compileError(R"(kernel @k(%x: buffer<i64>) {
  %s = shared_alloc : shared<i64, 4>
  %i = const 0 : i32
  %v = load %x[%i] : i64
  %old = atomic_max.u %s[%i], %v : i64
}
)",
                                 caps);
  EXPECT_CONTAINS(err, ("test.tir:5:"));
  EXPECT_CONTAINS(err, ("'atomic_max' needs 64-bit atomics on i64 shared memory "
                        "(caps.shaderSharedInt64Atomics), which the target lacks"));
}

TEST(VulkanErrors, SmallIntegerAtomicIsRejected) {
  // Not expressible in text (the verifier rejects it); built in C++ it still gets a
  // located error, never a module.
  ir::Module m;
  m.filename = "built.tir";
  ir::Function *f = m.addFunction(true, "k");
  ir::Value *buf = f->body->addArg(ir::Type::buffer(ir::Scalar::I16), "x");
  ir::Builder b(*f->body, ir::Loc{7, 3});
  ir::Value *i = b.constInt(0, ir::Scalar::I32);
  ir::Value *one = b.constInt(1, ir::Scalar::I16);
  b.atomic(ir::OpKind::AtomicAdd, buf, i, one);
  b.ret();
  std::string err;
  EXPECT_EQ(testing::compile(m, err), nullptr);
  EXPECT_CONTAINS(err, ("built.tir:7:3: error:"));
  EXPECT_CONTAINS(err, ("atomic_add"));
  EXPECT_CONTAINS(err, ("i16"));
}

// GLSL.std.450 has no 64-bit transcendentals: the f64 decompositions use f64 arithmetic and
// 32-bit word operations only, so they need neither a 64-bit GLSL function nor Int64.
TEST(VulkanErrors, F64TranscendentalsNeedNoInt64) {
  auto m = testing::parse(R"(kernel @k(%x: buffer<f64>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f64
  %a = exp %v : f64
  %b = log1p %a : f64
  %c = pow %b, %v : f64
  %d = sin %c : f64
  %e = erf %d : f64
  store %e, %x[%i] : f64
}
)");
  ASSERT_TRUE(m);
  VulkanTargetCaps caps;
  caps.int64 = false;
  std::string err;
  auto cm = testing::compile(*m, err, caps);
  ASSERT_TRUE(cm) << err;
  const std::string &dis = cm->dump("spirv.dis");
  EXPECT_EQ(dis.find("Capability Int64"), std::string::npos) << dis.substr(0, 400);
  EXPECT_NE(dis.find("Capability Float64"), std::string::npos);
}

TEST(VulkanErrors, ModuleWithoutKernel) {
  std::string err = compileError("func @f(%a: i32) -> i32 {\n  return %a\n}\n");
  EXPECT_CONTAINS(err, ("the module has no kernel to compile for Vulkan"));
}

} // namespace
} // namespace tessera::vulkan
