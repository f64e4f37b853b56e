// Program::create refuses modules past the size limits of ir/core/limits.h even when they
// were built in C++ and never verified (issue #10, part 6): a kernel of 40000 ops comes back
// as an error naming the limit, quickly, and the device then compiles and runs a kernel
// correctly (checked against the fp64 interpreter). On cpu:0 and vulkan:0.
#include "runtime/tests/device_session.h"

#include "ir/core/builder.h"
#include "ir/core/limits.h"

#include <chrono>

namespace tessera {
namespace {

class ProgramLimits : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (!session_.open(GetParam()))
      GTEST_SKIP() << GetParam() << " is not available here";
  }
  testing::DeviceSession session_;
};

TEST_P(ProgramLimits, ModulesPastTheOpLimitAreRefusedBeforeCompiling) {
  ir::Module m;
  m.filename = "built.tir";
  ir::Function *f = m.addFunction(true, "k");
  ir::Value *x = f->body->addArg(ir::Type::buffer(ir::Scalar::F32), "x");
  ir::Builder b(*f->body);
  ir::Value *i = b.workItem(ir::OpKind::GlobalId, 0);
  ir::Value *v = b.load(x, i);
  for (int k = 0; k < 40000; ++k)
    v = b.mul(v, v);
  b.store(v, x, i);
  b.ret();
  auto t0 = std::chrono::steady_clock::now();
  std::string err;
  EXPECT_EQ(Program::create(session_.device, m, nullptr, {}, &err), nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(err.find("@k has 40003 ops, more than the limit of 32768 per function"),
            std::string::npos)
      << err;
  EXPECT_LT(s, 5.0) << "refused only after compiling?";
  testing::expectCorrectRun(session_.device, testing::kSaxpy, "saxpy");
}

INSTANTIATE_TEST_SUITE_P(Devices, ProgramLimits, ::testing::Values("cpu:0", "vulkan:0"),
                         testing::backendOf);

} // namespace
} // namespace tessera
