// The fault modes of the Vulkan codegen (backends/kernel_faults.h): every example, kernel
// case and conformance variant validates in every mode (in-process and with the spirv-val
// command); the checks each mode emits (bounds guards, the fault record, division and step
// checks, cancellation points) and the metadata that tells the driver about the control
// buffer; and the 1-D dispatch that gives 2-D/3-D workgroups the documented subgroup layout.
#include "backends/vulkan/codegen/tests/codegen_test_util.h"
#include "conformance/catalog.h"
#include "conformance/kernel_cases.h"

#include <cstdlib>
#include <filesystem>
#include <regex>

namespace tessera::vulkan {
namespace {

using testing::parse;

constexpr tsr_bounds_mode kModes[] = {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED};

std::unique_ptr<VulkanCompiledModule> compileIn(const ir::Module &m, tsr_bounds_mode mode,
                                                std::string &err) {
  VulkanCompileOptions opts;
  opts.bounds = mode;
  return compileKernelModule(m, opts, &err);
}

/// The disassembly of `text` compiled in `mode` (empty on failure, with a test failure).
std::string disasm(const std::string &text, tsr_bounds_mode mode,
                   VulkanKernelInfo *info = nullptr) {
  auto m = parse(text);
  if (!m)
    return {};
  std::string err;
  auto cm = compileIn(*m, mode, err);
  EXPECT_NE(cm, nullptr) << err;
  if (!cm)
    return {};
  if (info)
    *info = cm->kernels()[0];
  return cm->dump("spirv.dis");
}

size_t count(const std::string &text, const std::string &part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

TEST(VulkanFaults, EveryExampleAndKernelCaseValidatesInEveryMode) {
  std::vector<std::string> files =
      conform::kernelCaseFiles(std::string(TESSERA_SOURCE_DIR) + "/ir/examples");
  std::vector<std::string> ours =
      conform::kernelCaseFiles(std::string(TESSERA_SOURCE_DIR) + "/conformance/kernels");
  files.insert(files.end(), ours.begin(), ours.end());
  ASSERT_GE(files.size(), 15u);
  for (const std::string &file : files) {
    ir::ParseResult pr = ir::parseFile(file);
    ASSERT_TRUE(pr.ok()) << file;
    for (tsr_bounds_mode mode : kModes) {
      std::string err;
      auto cm = compileIn(*pr.module, mode, err);
      if (!cm && err.find("registers per lane") != std::string::npos)
        continue; // matrix_large: refused with a located error (conformance/xfail/vulkan.txt)
      ASSERT_NE(cm, nullptr) << file << " mode " << mode << ": " << err;
      EXPECT_TRUE(validateSpirv(cm->words(), &err)) << file << " mode " << mode << ": " << err;
      if (std::string(TESSERA_SPIRV_VAL).empty())
        continue;
      // The spirv-val command as well: it is what a driver team would run.
      std::string dir = ::testing::TempDir() + "vulkan_faults_" +
                        std::filesystem::path(file).stem().string() + "_" + std::to_string(mode);
      ASSERT_TRUE(cm->writeStages(dir, &err)) << err;
      std::string cmd = std::string(TESSERA_SPIRV_VAL) + " --target-env vulkan1.2 " + dir +
                        "/1-spirv.spv > " + dir + "/spirv-val.log 2>&1";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << "see " << dir << "/spirv-val.log";
    }
  }
}

TEST(VulkanFaults, EveryConformanceVariantValidatesInCheckedAndUncheckedModes) {
  conform::Catalog cat = conform::buildCatalog();
  ASSERT_FALSE(cat.variants.empty());
  for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_CHECKED}) // robust: the default
    for (const conform::Variant &v : cat.variants) {
      std::string err;
      auto cm = compileIn(*conform::buildKernel(v), mode, err);
      ASSERT_NE(cm, nullptr) << v.name << " mode " << mode << ": " << err;
    }
}

TEST(VulkanFaults, OptionsHashCoversTheMode) {
  VulkanCompileOptions a, b, c;
  a.bounds = TSR_BOUNDS_UNCHECKED;
  c.bounds = TSR_BOUNDS_CHECKED;
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_NE(b.hash(), c.hash());
  EXPECT_NE(a.hash(), c.hash());
  EXPECT_EQ(VulkanCompileOptions{}.bounds, TSR_BOUNDS_ROBUST);
}

const char *kCopy = R"(
kernel @copy(%a: buffer<f32, readonly>, %b: buffer<f32, writeonly>, %n: i32) {
  %i = global_id.x : i32
  %v = load %a[%i] : f32
  store %v, %b[%i] : f32
}
)";

TEST(VulkanFaults, UncheckedEmitsNoGuard) {
  VulkanKernelInfo info;
  std::string d = disasm(kCopy, TSR_BOUNDS_UNCHECKED, &info);
  EXPECT_EQ(count(d, "OpArrayLength"), 0u) << d;
  EXPECT_EQ(count(d, "OpSelectionMerge"), 0u) << d;
  EXPECT_EQ(info.controlBinding, UINT32_MAX);
}

TEST(VulkanFaults, RobustGuardsEveryAccessWithoutARecord) {
  VulkanKernelInfo info;
  std::string d = disasm(kCopy, TSR_BOUNDS_ROBUST, &info);
  EXPECT_EQ(count(d, "OpArrayLength"), 2u) << d; // one per access, of its own view
  EXPECT_EQ(count(d, "OpULessThan"), 2u) << d;   // one compare: negative indices are huge
  EXPECT_EQ(count(d, "OpSelectionMerge"), 2u) << d;
  EXPECT_EQ(count(d, "OpPhi"), 1u) << d; // the load's value or 0
  EXPECT_EQ(count(d, "OpAtomicCompareExchange"), 0u) << d;
  EXPECT_EQ(info.controlBinding, UINT32_MAX); // no record, no loop: no control buffer
}

TEST(VulkanFaults, CheckedRecordsTheFirstFaultInTheControlBuffer) {
  VulkanKernelInfo info;
  std::string d = disasm(kCopy, TSR_BOUNDS_CHECKED, &info);
  EXPECT_EQ(info.controlBinding, 3u); // after the three parameters
  EXPECT_CONTAINS(d, "OpDecorate %tsr_control Binding 3");
  // One claim per access: kind 1 (load) and 2 (store), compare-exchanged from 0.
  EXPECT_EQ(count(d, "OpAtomicCompareExchange"), 2u) << d;
  std::regex claim("OpAtomicCompareExchange %uint %\\w+ %uint_1 %uint_0 %uint_0 %uint_([12]) "
                   "%uint_0");
  EXPECT_EQ(std::distance(std::sregex_iterator(d.begin(), d.end(), claim), std::sregex_iterator()),
            2)
      << d;
  // Then 13 stores each (every word after `kind`), and the accesses' own store.
  EXPECT_EQ(count(d, "OpStore"), 2u * (TSR_KERNEL_FAULT_WORDS - 1) + 1) << d;
}

TEST(VulkanFaults, SharedArraysCompareWithTheirStaticSize) {
  std::string d = disasm(R"(
kernel @sh(%o: buffer<i32>) {
  %s = shared_alloc : shared<i32, 48>
  %i = local_id.x : i32
  store %i, %s[%i] : i32
}
)",
                         TSR_BOUNDS_CHECKED);
  EXPECT_CONTAINS(d, "%uint_48");
  EXPECT_CONTAINS(d, "%uint_4294967295"); // param = UINT32_MAX names a shared array
  EXPECT_CONTAINS(d, "%uint_4 %uint_0");  // kind 4: shared out of bounds
}

TEST(VulkanFaults, CheckedDivisionRecordsZeroAndOverflow) {
  const char *div = R"(
kernel @d(%o: buffer<i32>, %y: i32) {
  %i = global_id.x : i32
  %q = div %i, %y : i32
  store %q, %o[%i] : i32
}
)";
  std::string checked = disasm(div, TSR_BOUNDS_CHECKED);
  EXPECT_CONTAINS(checked, "%uint_5 %uint_0"); // division by zero
  EXPECT_CONTAINS(checked, "%uint_6 %uint_0"); // MIN / -1
  EXPECT_CONTAINS(checked, "%uint_2147483648");
  std::string robust = disasm(div, TSR_BOUNDS_ROBUST);
  EXPECT_EQ(robust.find("%uint_5 %uint_0"), std::string::npos) << robust;
  std::string unsignedDiv = disasm(R"(
kernel @d(%o: buffer<i32>, %y: i32) {
  %i = global_id.x : i32
  %q = div.u %i, %y : i32
  store %q, %o[%i] : i32
}
)",
                                   TSR_BOUNDS_CHECKED);
  EXPECT_EQ(unsignedDiv.find("%uint_6 %uint_0"), std::string::npos) << "no overflow unsigned";
}

// Every mode: a dynamic loop runs in chunks of 1024 iterations and polls the cancel flag
// between chunks, leaving when the host has set it; then it claims the deadline record and
// returns. A loop the device cut short is recorded once, at the kernel's end; the kernel's
// entry polls the flag too.
TEST(VulkanFaults, DynamicLoopsTestTheCancelFlagInEveryMode) {
  const char *loops = R"(
kernel @w(%o: buffer<i32>, %n: i32) {
  %z = const 0 : i32
  %one = const 1 : i32
  %r = while iter(%x = %z) {
    %c = cmp.slt %x, %n : i32
    condition %c
  } do {
    %y1 = add %x, %one : i32
    yield %y1
  }
  store %r, %o[%z] : i32
}
)";
  for (tsr_bounds_mode mode : kModes) {
    VulkanKernelInfo info;
    std::string d = disasm(loops, mode, &info);
    EXPECT_EQ(info.controlBinding, 2u) << mode;
    EXPECT_EQ(count(d, "Volatile"), 3u) << d;     // entry, the body's break, after the loop
    EXPECT_CONTAINS(d, "%uint_8 %uint_0");        // the entry's deadline record
    EXPECT_EQ(count(d, "OpLoopMerge"), 2u) << d;  // chunks of 1024, the poll between them
    EXPECT_CONTAINS(d, "%uint_1024");
    size_t limitRecord = d.rfind("%uint_9 %uint_0"); // TSR_FAULT_LOOP_LIMIT, after the loop
    ASSERT_NE(limitRecord, std::string::npos) << d;
    EXPECT_GT(limitRecord, d.rfind("OpLoopMerge")) << d;
    EXPECT_EQ(count(d, "OpReturn\n"), 3u) << d; // entry, after the loop, the kernel's end
    // No record write inside the loop: it lies between OpLoopMerge and the loop's merge.
    size_t loop = d.find("OpLoopMerge"), cas = d.find("OpAtomicCompareExchange", loop);
    std::smatch merge;
    ASSERT_TRUE(std::regex_search(d, merge, std::regex("OpLoopMerge (%\\w+)")));
    EXPECT_GT(cas, d.find(merge[1].str() + " = OpLabel")) << d;
  }
  // A `for` with constant bounds and step always ends: no cancellation point.
  VulkanKernelInfo info;
  std::string d = disasm(R"(
kernel @f(%o: buffer<i32>) {
  %z = const 0 : i32
  %n = const 8 : i32
  %one = const 1 : i32
  %s = for %i = %z to %n step %one iter(%a = %z) : i32 {
    %b = add %a, %i : i32
    yield %b
  }
  store %s, %o[%z] : i32
}
)",
                         TSR_BOUNDS_ROBUST, &info);
  EXPECT_EQ(count(d, "Volatile"), 1u) << d;       // none inside: only the loop-limit test
  EXPECT_EQ(count(d, "OpSGreaterThan"), 0u) << d; // a constant step > 0 needs no test
  EXPECT_CONTAINS(d, "%uint_9 %uint_0");          // but the device may still cut it short
  EXPECT_EQ(info.controlBinding, 1u);
}

TEST(VulkanFaults, RuntimeStepIsTestedAndRecorded) {
  const char *loop = R"(
kernel @f(%o: buffer<i32>, %st: i32) {
  %z = const 0 : i32
  %n = const 8 : i32
  %s = for %i = %z to %n step %st iter(%a = %z) : i32 {
    %b = add %a, %i : i32
    yield %b
  }
  store %s, %o[%z] : i32
}
)";
  std::string robust = disasm(loop, TSR_BOUNDS_ROBUST);
  EXPECT_EQ(count(robust, "OpSGreaterThan"), 1u) << robust;
  EXPECT_EQ(count(robust, "Volatile"), 3u) << robust; // entry, between chunks, after
  // A dynamic `for` runs in chunks of 1024 iterations (an inner loop without a poll).
  EXPECT_EQ(count(robust, "OpLoopMerge"), 2u) << robust;
  EXPECT_CONTAINS(robust, "%uint_1024");
  size_t innerLoop = robust.rfind("OpLoopMerge");
  std::smatch innerMerge;
  std::string tail = robust.substr(innerLoop);
  ASSERT_TRUE(std::regex_search(tail, innerMerge, std::regex("OpLoopMerge (%\\w+)")));
  EXPECT_GT(robust.find("Volatile", innerLoop), robust.find(innerMerge[1].str() + " = OpLabel"))
      << "no poll inside the chunk: " << robust;
  EXPECT_EQ(robust.find("%uint_7 %uint_0"), std::string::npos) << robust;
  std::string checked = disasm(loop, TSR_BOUNDS_CHECKED);
  EXPECT_CONTAINS(checked, "%uint_7 %uint_0"); // TSR_FAULT_LOOP_STEP
}

// docs/ir.md: subgroups are consecutive by linear local id, so the module dispatches a 1-D
// workgroup of x*y*z work-items and rebuilds the 3-D local ids.
TEST(VulkanFaults, WorkgroupsAreDispatchedOneDimensional) {
  std::string d = disasm(R"(
kernel @sg(%o: buffer<i32, writeonly>) {
  %x = local_id.x : i32
  %y = local_id.y : i32
  %g = global_id.z : i32
  %s = add %x, %y : i32
  %t = add %s, %g : i32
  store %t, %o[%t] : i32
}
)",
                         TSR_BOUNDS_UNCHECKED);
  EXPECT_CONTAINS(d, "OpSpecConstantOp %uint IMul %local_size_x %local_size_y");
  EXPECT_CONTAINS(d, "BuiltIn LocalInvocationIndex");
  EXPECT_EQ(d.find("BuiltIn LocalInvocationId\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("BuiltIn GlobalInvocationId"), std::string::npos) << d;
  EXPECT_CONTAINS(d, "OpDecorate %local_size_z SpecId 2");
}

} // namespace
} // namespace tessera::vulkan
