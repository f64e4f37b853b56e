// The SPIR-V builder on its own: deduplication, capabilities recorded on use, and a small
// structured module (if/else with a phi, a loop with a back-edge phi, a break) that
// SPIRV-Tools accepts for Vulkan 1.2.
#include "backends/spirv/spirv_builder.h"
#include "backends/vulkan/codegen/vulkan_codegen.h"

#include <gtest/gtest.h>

namespace tessera::spirv {
namespace {

TEST(SpirvBuilder, DeduplicatesTypesAndConstants) {
  ModuleBuilder b(Flavour::Shader);
  EXPECT_EQ(b.typeInt(32), b.typeInt(32));
  EXPECT_NE(b.typeInt(32), b.typeInt(16));
  EXPECT_EQ(b.constU32(7), b.constU32(7));
  EXPECT_NE(b.constU32(7), b.constant(b.typeInt(64), 7));
  EXPECT_EQ(b.typePointer(spv::StorageClassWorkgroup, b.typeFloat(32)),
            b.typePointer(spv::StorageClassWorkgroup, b.typeFloat(32)));
  EXPECT_EQ(b.typeRuntimeArray(b.typeFloat(32), 4), b.typeRuntimeArray(b.typeFloat(32), 4));
  Id s = b.typeStruct(std::vector<Id>{b.typeInt(32)});
  EXPECT_NE(s, b.typeStruct(std::vector<Id>{b.typeInt(32)})); // structs carry decorations
}

TEST(SpirvBuilder, RecordsCapabilitiesOnlyWhenUsed) {
  ModuleBuilder b(Flavour::Shader);
  EXPECT_FALSE(b.hasCapability(spv::CapabilityInt64));
  b.typeInt(32);
  EXPECT_FALSE(b.hasCapability(spv::CapabilityInt64));
  b.typeInt(64);
  b.typeFloat(16);
  EXPECT_TRUE(b.hasCapability(spv::CapabilityInt64));
  EXPECT_TRUE(b.hasCapability(spv::CapabilityFloat16));
  EXPECT_FALSE(b.hasCapability(spv::CapabilityFloat64));
  ModuleBuilder k(Flavour::Kernel);
  EXPECT_TRUE(k.hasCapability(spv::CapabilityKernel));
  EXPECT_FALSE(k.hasCapability(spv::CapabilityShader));
}

// for (i = 0; i < 10; ++i) acc = (i & 1) ? acc + i : acc;  while-style break at acc > 20.
TEST(SpirvBuilder, StructuredControlFlowValidates) {
  ModuleBuilder b(Flavour::Shader);
  Id u32 = b.typeInt(32), boolT = b.typeBool(), voidT = b.typeVoid();
  Id rt = b.typeRuntimeArray(u32, 4);
  Id blk = b.typeStruct(std::vector<Id>{rt});
  b.decorate(blk, spv::DecorationBlock);
  b.memberDecorate(blk, 0, spv::DecorationOffset, {0});
  Id var = b.globalVariable(b.typePointer(spv::StorageClassStorageBuffer, blk),
                            spv::StorageClassStorageBuffer);
  b.decorate(var, spv::DecorationDescriptorSet, {0});
  b.decorate(var, spv::DecorationBinding, {0});
  Id fn = b.beginFunction(voidT, b.typeFunction(voidT));
  LoopBlocks l = b.beginLoop();
  PhiRef i = b.phi(u32, {{b.constU32(0), l.preheader}});
  PhiRef acc = b.phi(u32, {{b.constU32(0), l.preheader}});
  b.loopHeaderEnd(l, b.op(spv::OpULessThan, boolT, {i.id, b.constU32(10)}));
  Id odd = b.op(spv::OpINotEqual, boolT,
                {b.op(spv::OpBitwiseAnd, u32, {i.id, b.constU32(1)}), b.constU32(0)});
  IfBlocks ib = b.beginIf(odd, true);
  Id sum = b.op(spv::OpIAdd, u32, {acc.id, i.id});
  b.beginElse(ib);
  b.endIf(ib);
  Id next = b.phi(u32, {{sum, ib.thenEnd}, {acc.id, ib.elseEnd}}).id;
  b.breakUnless(l, b.op(spv::OpULessThanEqual, boolT, {next, b.constU32(20)}));
  b.beginContinue(l);
  b.addIncoming(i, b.op(spv::OpIAdd, u32, {i.id, b.constU32(1)}), l.cont);
  b.addIncoming(acc, next, l.cont);
  b.endLoop(l);
  Id ptr = b.op(spv::OpAccessChain, b.typePointer(spv::StorageClassStorageBuffer, u32),
                {var, b.constU32(0), b.constU32(0)});
  b.opVoid(spv::OpStore, {ptr, acc.id});
  b.returnVoid();
  b.endFunction();
  b.entryPoint(spv::ExecutionModelGLCompute, fn, "main", std::vector<Id>{var});
  b.executionMode(fn, spv::ExecutionModeLocalSize, {1, 1, 1});
  std::vector<uint32_t> words = b.finish();
  ASSERT_GE(words.size(), 5u);
  EXPECT_EQ(words[0], 0x07230203u);
  EXPECT_EQ(words[1], 0x00010500u);
  std::string err;
  EXPECT_TRUE(vulkan::validateSpirv(words, &err)) << err << vulkan::disassemble(words);
  EXPECT_EQ(words, b.finish()); // finish() is repeatable
}

} // namespace
} // namespace tessera::spirv
