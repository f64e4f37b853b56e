// The kernels every GPU codegen test compiles: each IR example (ir/examples/*.tir) and each
// conformance catalog variant (conformance/catalog.h). Catalog kernels are batched, many
// per module under distinct names, so that one LLVM pipeline run (and one ptxas / ld.lld
// run) covers a batch: about 800 kernels compile in seconds instead of minutes.
#pragma once

#include "conformance/catalog.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::gputest {

struct Example {
  std::string file; // stem, e.g. "saxpy"
  std::unique_ptr<ir::Module> module;
};

inline std::vector<Example> loadExamples() {
  std::vector<std::string> paths;
  for (auto &e : std::filesystem::directory_iterator(TESSERA_SOURCE_DIR "/ir/examples"))
    if (e.path().extension() == ".tir")
      paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<Example> out;
  for (const std::string &p : paths) {
    ir::ParseResult r = ir::parseFile(p);
    if (!r.ok()) {
      ADD_FAILURE() << p << " does not parse";
      continue;
    }
    out.push_back({std::filesystem::path(p).stem().string(), std::move(r.module)});
  }
  return out;
}

struct Batch {
  std::unique_ptr<ir::Module> module; // kernels conform_<variant index>
  std::vector<size_t> variants;
};

/// The catalog's variants, `perBatch` kernels per module, in catalog order.
inline std::vector<Batch> conformanceBatches(const conform::Catalog &cat, size_t perBatch) {
  std::vector<Batch> out;
  for (size_t vi = 0; vi < cat.variants.size(); ++vi) {
    if (out.empty() || out.back().variants.size() == perBatch) {
      out.push_back({std::make_unique<ir::Module>(), {}});
      out.back().module->filename = "<conform batch " + std::to_string(out.size() - 1) + ">";
    }
    std::unique_ptr<ir::Module> one = conform::buildKernel(cat.variants[vi]);
    std::unique_ptr<ir::Function> f = std::move(one->functions.at(0));
    f->name = "conform_" + std::to_string(vi);
    out.back().module->functions.push_back(std::move(f));
    out.back().variants.push_back(vi);
  }
  return out;
}

/// A module of the single variant `vi` (to name the culprit when a batch fails).
inline std::unique_ptr<ir::Module> variantModule(const conform::Catalog &cat, size_t vi) {
  return conform::buildKernel(cat.variants[vi]);
}

/// Kernels (IR text) that reach what the catalog and the examples do not: every atomic on
/// i32 / i64 (and f32 add / xchg) on global and shared memory, and every subgroup reduction
/// and shuffle on every type, inside a divergent `if` and a loop with a lane-dependent
/// trip count (so lane masks are narrowed by ballots).
inline std::string simtCoverageKernels() {
  std::string t;
  t += "kernel @atomics(%g32: buffer<i32>, %g64: buffer<i64>, %gf: buffer<f32>, %v32: i32, "
       "%v64: i64, %vf: f32) {\n"
       "  %s32 = shared_alloc : shared<i32, 64>\n  %s64 = shared_alloc : shared<i64, 64>\n"
       "  %sf = shared_alloc : shared<f32, 64>\n  %i = local_id.x : i32\n";
  int n = 0;
  auto atomic = [&](const std::string &op, const std::string &mem, const std::string &v,
                    const std::string &ty) {
    t += "  %a" + std::to_string(n++) + " = " + op + " %" + mem + "[%i], " + v + " : " + ty + "\n";
  };
  for (const char *space : {"g", "s"}) {
    for (auto [bits, v] : {std::pair<const char *, const char *>{"32", "%v32"}, {"64", "%v64"}}) {
      std::string mem = std::string(space) + bits, ty = std::string("i") + bits;
      for (const char *op : {"atomic_add", "atomic_min", "atomic_max", "atomic_min.u",
                             "atomic_max.u", "atomic_xchg"})
        atomic(op, mem, v, ty);
      atomic("atomic_cas", mem, std::string(v) + ", " + v, ty);
    }
    atomic("atomic_add", std::string(space) + "f", "%vf", "f32");
    atomic("atomic_xchg", std::string(space) + "f", "%vf", "f32");
  }
  t += "}\n";
  for (const char *ty : {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"}) {
    std::string T = ty, k = "sg_" + T;
    bool number = T != "i1", isInt = T[0] == 'i';
    t += "kernel @" + k + "(%x: buffer<" + T + ">, %o: buffer<" + T +
         ">, %f: buffer<i32, readonly>) {\n"
         "  %i = global_id.x : i32\n  %v = load %x[%i] : " +
         T +
         "\n"
         "  %fl = load %f[%i] : i32\n  %zero = const 0 : i32\n  %one = const 1 : i32\n"
         "  %lane = subgroup_local_id : i32\n  %c = cmp.ne %fl, %zero : i32\n  if %c {\n";
    std::vector<std::string> ops = {"shuffle %v, %lane", "shuffle_xor %v, %one",
                                    "broadcast %v, %zero"};
    if (number)
      for (const char *r : {"subgroup_add", "subgroup_min", "subgroup_max"})
        ops.push_back(std::string(r) + " %v");
    if (number && isInt)
      for (const char *r : {"subgroup_min.u", "subgroup_max.u"})
        ops.push_back(std::string(r) + " %v");
    for (size_t j = 0; j < ops.size(); ++j)
      t += "    %r" + std::to_string(j) + " = " + ops[j] + " : " + T + "\n    store %r" +
           std::to_string(j) + ", %o[%i] : " + T + "\n";
    // A loop whose trip count differs per lane: the body's mask shrinks every iteration.
    t += "  }\n  for %k = %zero to %fl step %one : i32 {\n"
         "    %s = shuffle_xor %v, %one : " +
         T + "\n    store %s, %o[%k] : " + T + "\n  }\n}\n";
  }
  return t;
}

} // namespace tessera::gputest
