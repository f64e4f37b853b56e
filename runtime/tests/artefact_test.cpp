// The .tsrx artefact container (every target's): a round trip keeps every field, and malformed
// bytes (truncated, wrong magic, lying sizes, bad types, bad offsets) decode to nothing, never
// crash.
#include "tessera/artefact.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

Artefact sample() {
  Artefact a;
  a.format = "vulkan-spirv";
  ArtefactKernel k;
  k.name = "saxpy";
  k.params = {ir::Type{ir::Type::Kind::Buffer, ir::Scalar::F32, ir::Access::ReadOnly, 0},
              ir::Type::scalar(ir::Scalar::F32), ir::Type::scalar(ir::Scalar::I64)};
  k.offsets = {0, 0, 8};
  k.pushBytes = 16;
  k.sharedBytes = 1024;
  k.subgroupSize = 8;
  a.kernels = {k};
  a.image = {0x03, 0x02, 0x23, 0x07, 0, 10, '\n', 'b'}; // binary, with a newline inside
  a.fallback = {};
  return a;
}

TEST(Artefact, RoundTripKeepsEveryField) {
  Artefact a = sample();
  auto b = decodeArtefact(encodeArtefact(a));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->format, "vulkan-spirv");
  ASSERT_EQ(b->kernels.size(), 1u);
  const ArtefactKernel &k = b->kernels[0];
  EXPECT_EQ(k.name, "saxpy");
  EXPECT_EQ(k.offsets, (std::vector<uint32_t>{0, 0, 8}));
  EXPECT_EQ(k.pushBytes, 16u);
  EXPECT_EQ(k.sharedBytes, 1024u);
  EXPECT_EQ(k.subgroupSize, 8u);
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].kind, ir::Type::Kind::Buffer);
  EXPECT_EQ(k.params[0].access, ir::Access::ReadOnly);
  EXPECT_EQ(k.params[2].elem, ir::Scalar::I64);
  EXPECT_EQ(b->image, a.image);
  EXPECT_TRUE(b->fallback.empty());
  EXPECT_EQ(k.controlBinding, UINT32_MAX); // none written, none read
}

// The Vulkan control buffer's binding (backends/gpu_module.h) survives the round trip, and
// a container written before it existed (no `control` line) still decodes.
TEST(Artefact, ControlBindingRoundTripsAndIsOptional) {
  Artefact a = sample();
  a.kernels[0].controlBinding = 3;
  std::string bytes = encodeArtefact(a);
  EXPECT_NE(bytes.find("\ncontrol 3\n"), std::string::npos);
  auto b = decodeArtefact(bytes);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->kernels[0].controlBinding, 3u);
  std::string old = bytes;
  old.erase(old.find("control 3\n"), 10);
  auto c = decodeArtefact(old);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kernels[0].controlBinding, UINT32_MAX);
  std::string orphan = "TSRX1 vulkan-spirv\ncontrol 3\n" + bytes.substr(bytes.find("kernel"));
  EXPECT_FALSE(decodeArtefact(orphan).has_value()) << "a control line before any kernel";
}

TEST(Artefact, CudaKeepsBothImagesAndNoOffsets) {
  Artefact a = sample();
  a.format = "cuda";
  a.kernels[0].offsets.clear();
  a.fallback = {'.', 'v', 'e', 'r', 0};
  auto b = decodeArtefact(encodeArtefact(a));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->fallback, a.fallback);
  EXPECT_TRUE(b->kernels[0].offsets.empty());
}

// The CPU's object travels in the same container: no offsets are written for it (the
// parameters carry none), and a kernel that mixes parameters with and without one is refused.
TEST(Artefact, CpuObjectRoundTripsWithoutOffsets) {
  Artefact a = sample();
  a.format = "cpu";
  a.kernels[0].offsets.clear();
  a.kernels[0].pushBytes = 0;
  a.image = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  std::string bytes = encodeArtefact(a);
  EXPECT_NE(bytes.find(" 1.7.0.0 1.4.0.0\n"), std::string::npos) << bytes;
  auto b = decodeArtefact(bytes);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->format, "cpu");
  EXPECT_TRUE(b->kernels[0].offsets.empty());
  EXPECT_EQ(b->kernels[0].params.size(), 3u);
  EXPECT_EQ(b->image, a.image);
  std::string mixed = bytes;
  mixed.replace(mixed.find(" 1.7.0.0 "), 9, " 1.7.0.0:4 ");
  EXPECT_FALSE(decodeArtefact(mixed).has_value());
}

TEST(Artefact, MalformedBytesDecodeToNothing) {
  std::string good = encodeArtefact(sample());
  EXPECT_FALSE(decodeArtefact("").has_value());
  EXPECT_FALSE(decodeArtefact("TSRX2 cuda\n").has_value());
  for (size_t cut : {size_t(6), size_t(20), size_t(40), good.size() - 1})
    EXPECT_FALSE(decodeArtefact(good.substr(0, cut)).has_value()) << "cut at " << cut;
  std::string lying = good;
  lying.replace(lying.find("bytes 8"), 7, "bytes 99999999");
  EXPECT_FALSE(decodeArtefact(lying).has_value());
  std::string badType = good;
  badType.replace(badType.find("1.4.0.0"), 7, "9.9.9.9");
  EXPECT_FALSE(decodeArtefact(badType).has_value());
  std::string badOffset = good;
  badOffset.replace(badOffset.find(":8"), 2, ":x");
  EXPECT_FALSE(decodeArtefact(badOffset).has_value());
}

} // namespace
} // namespace tessera
