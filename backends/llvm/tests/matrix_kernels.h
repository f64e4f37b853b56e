// Matrix kernels every GPU codegen test compiles (CUDA, ROCm): each input type (f16, bf16,
// f32, i8) at shapes that fit the instructions exactly, that need padding (8), and large
// ones; row- and column-major loads with `bounds`; a K loop carrying the accumulator;
// matrix_map with an outer value and a narrowing convert; an `if` and a `while` yielding
// matrices; shared-memory loads and stores; and bench/gpu/gemm_mx.tir.
#pragma once

#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::gputest {

struct MatrixCase {
  std::string in, acc, out; // a/b element type, accumulator, stored type
  int m, n, k;
};

inline std::vector<MatrixCase> matrixCases() {
  std::vector<MatrixCase> cases;
  for (const char *t : {"bf16", "f16", "f32", "i8"}) {
    std::string in = t, acc = in == "i8" ? "i32" : "f32", out = in == "i8" ? "i32" : "bf16";
    for (auto [m, n, k] : {std::tuple{16, 8, 16}, {8, 8, 8}, {32, 32, 32}, {32, 16, 64}})
      cases.push_back({in, acc, out, m, n, k});
  }
  return cases;
}

inline std::string matrixType(const std::string &t, int r, int c, const char *use) {
  return "matrix<" + t + ", " + std::to_string(r) + ", " + std::to_string(c) + ", " + use + ">";
}

inline std::string matrixKernelName(const MatrixCase &c) {
  return "mx_" + c.in + "_" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
         std::to_string(c.k);
}

/// D = convert(s * (C + A B)) with A row-major, B column-major, C row-major (bounds m, n, k),
/// K in steps of the matrix's K; then, when `flag` is set, the result is replaced by a fill.
inline std::string matrixKernel(const MatrixCase &c) {
  std::string ta = matrixType(c.in, c.m, c.k, "a"), tb = matrixType(c.in, c.k, c.n, "b"),
              tc = matrixType(c.acc, c.m, c.n, "acc"), to = matrixType(c.out, c.m, c.n, "acc");
  std::string one = c.acc == "i32" ? "1" : "1.0";
  std::ostringstream s;
  s << "kernel @" << matrixKernelName(c) << "(%A: buffer<" << c.in << ", readonly>, %B: buffer<"
    << c.in << ", readonly>, %C: buffer<" << c.acc << ">, %D: buffer<" << c.out
    << ", writeonly>, %m: i32, %n: i32, %k: i32, %s: " << c.acc << ", %flag: i1) {\n"
    << "  %zero = const 0 : i32\n"
    << "  %kt = const " << c.k << " : i32\n"
    << "  %c = matrix_load %C[%zero] stride %n bounds %m, %n : " << tc << "\n"
    << "  %r = for %k0 = %zero to %k step %kt iter(%acc = %c) : i32 {\n"
    << "    %kl = sub %k, %k0 : i32\n"
    << "    %a = matrix_load %A[%k0] stride %k bounds %m, %kl : " << ta << "\n"
    << "    %b = matrix_load.col %B[%k0] stride %k bounds %kl, %n : " << tb << "\n"
    << "    %d = matrix_mad %a, %b, %acc : " << ta << ", " << tb << ", " << tc << "\n"
    << "    yield %d\n"
    << "  }\n"
    << "  %e = matrix_map(%x = %r) -> " << to << " {\n"
    << "    %y = mul %x, %s : " << c.acc << "\n";
  if (c.out == c.acc)
    s << "    yield %y\n";
  else
    s << "    %z = convert %y : " << c.acc << " -> " << c.out << "\n    yield %z\n";
  s << "  }\n"
    << "  %q = if %flag -> (" << to << ") {\n"
    << "    %o = const " << one << " : " << c.out << "\n"
    << "    %f = matrix_fill %o : " << to << "\n"
    << "    yield %f\n"
    << "  } else {\n"
    << "    yield %e\n"
    << "  }\n"
    << "  matrix_store %q, %D[%zero] stride %n bounds %m, %n : " << to << "\n"
    << "}\n";
  return s.str();
}

/// Matrices through a `while` whose body yields one iteration value into another's place
/// ((u, v) <- (u + v, u): v's new value is u's old one, which u's update overwrites), and
/// through shared memory (stored row-major, loaded column-major).
inline std::string matrixControlKernel() {
  std::string t = matrixType("f32", 16, 16, "acc");
  return "kernel @mx_while_shared(%X: buffer<f32>, %n: i32) {\n"
         "  %S = shared_alloc : shared<f32, 256>\n"
         "  %zero = const 0 : i32\n"
         "  %one = const 1 : i32\n"
         "  %c16 = const 16 : i32\n"
         "  %two = const 2.0 : f32\n"
         "  %x = matrix_load %X[%zero] stride %c16 : " +
         t +
         "\n"
         "  %y = matrix_fill %two : " +
         t +
         "\n"
         "  %i0, %p, %q = while iter(%i = %zero, %u = %x, %v = %y) {\n"
         "    %go = cmp.slt %i, %n : i32\n"
         "    condition %go\n"
         "  } do {\n"
         "    %i1 = add %i, %one : i32\n"
         "    %w = matrix_map(%e = %u, %f = %v) -> " +
         t +
         " {\n"
         "      %g = add %e, %f : f32\n"
         "      yield %g\n"
         "    }\n"
         "    yield %i1, %w, %u\n"
         "  }\n"
         "  matrix_store %q, %S[%zero] stride %c16 : " +
         t +
         "\n"
         "  barrier\n"
         "  %l = matrix_load.col %S[%zero] stride %c16 : " +
         t +
         "\n"
         "  matrix_store %l, %X[%zero] stride %c16 : " +
         t +
         "\n"
         "}\n";
}

/// The matrix kernels of bench/gpu/gemm_mx.tir, parsed and verified.
inline std::unique_ptr<ir::Module> loadGemmKernels() {
  std::string path = TESSERA_SOURCE_DIR "/bench/gpu/gemm_mx.tir";
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ir::ParseResult r = ir::parseModule(text, path, true);
  EXPECT_TRUE(r.module) << (r.diags.empty() ? "" : r.diags[0].str());
  return std::move(r.module);
}

/// One module with every matrixCases() kernel and matrixControlKernel(), parsed and verified.
inline std::unique_ptr<ir::Module> loadMatrixCases() {
  std::string text = matrixControlKernel();
  for (const MatrixCase &c : matrixCases())
    text += matrixKernel(c);
  ir::ParseResult r = ir::parseModule(text, "matrix_cases.tir", true);
  EXPECT_TRUE(r.module) << (r.diags.empty() ? "" : r.diags[0].str()) << "\n" << text;
  return std::move(r.module);
}

} // namespace tessera::gputest
