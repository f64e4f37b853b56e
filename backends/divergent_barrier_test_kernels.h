// Test-only: kernels with barriers inside control flow that differs between the work-items
// of a workgroup (docs/ir.md, "Barriers"), shared by the backends' divergent-barrier tests
// (backends/opencl/tests/pocl_run_test.cpp, runtime/tests/vulkan_faults_test.cpp).
#pragma once

#include <string>

namespace tessera::testing {

/// Kernel @d over a 1-D workgroup of `workgroup` work-items (grid 2): `body` (which may use
/// %l = local_id.x, %y = local_id.y and the i32 constants %c0, %c1, %c3) and then each
/// work-item stores its local id at its index; func @f(%n) follows, a barrier under 0 < %n.
inline std::string divergentBarrierKernel(const std::string &body, int workgroup) {
  return "kernel @d(%a: buffer<i32>) {\n"
         "  %l = local_id.x : i32\n  %y = local_id.y : i32\n"
         "  %c0 = const 0 : i32\n  %c1 = const 1 : i32\n  %c3 = const 3 : i32\n" +
         body + "  store %l, %a[%l] : i32\n}\nlaunch @d grid(2) workgroup(" +
         std::to_string(workgroup) + ") {\n  %a[" + std::to_string(workgroup) +
         "] = fill(-1)\n}\n"
         "func @f(%n: i32) {\n"
         "  %c0 = const 0 : i32\n"
         "  %lo = cmp.slt %c0, %n : i32\n"
         "  if %lo {\n    barrier\n  }\n"
         "  return\n"
         "}\n";
}

/// The divergent cases over a workgroup of 8: the op's location in divergentBarrierKernel
/// ("" for the inlined call) and how many work-items decide true.
struct DivergentBarrierCase {
  const char *name, *body, *where;
  unsigned yes;
};
inline constexpr DivergentBarrierCase kDivergentBarrierCases[] = {
    {"if", "  %lo = cmp.slt %l, %c3 : i32\n  if %lo {\n    barrier\n  }\n", "at 8:3", 3},
    {"if, barrier in else",
     "  %lo = cmp.slt %l, %c1 : i32\n  if %lo {\n  } else {\n    barrier\n  }\n", "at 8:3", 1},
    {"for", "  for %i = %c0 to %l step %c1 : i32 {\n    barrier\n  }\n", "at 7:3", 7},
    {"while",
     "  %r = while iter(%i = %c0) {\n    %go = cmp.slt %i, %l : i32\n    condition %go\n"
     "  } do {\n    barrier\n    %n = add %i, %c1 : i32\n    yield %n\n  }\n",
     "at 7:3", 7},
    {"inlined call", "  call @f(%l)\n", "", 7},
};

} // namespace tessera::testing
