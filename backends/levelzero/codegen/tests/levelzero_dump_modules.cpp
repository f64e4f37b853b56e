// Test helper for check_spirv_kernel.py: writes the Level Zero module of every .tir of
// ir/examples and conformance/kernels, in every bounds mode and both profiles, as
// OUT_DIR/<dir>_<name>.<bounds>[.strict].spv (but matrix_large.tir, which no target without
// matrix hardware compiles). Exit 1 (with the error) if any fails to compile.
#include "backends/levelzero/codegen/levelzero_codegen.h"
#include "ir/text/parser.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace tessera;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: levelzero_dump_modules OUT_DIR\n");
    return 2;
  }
  fs::create_directories(argv[1]);
  std::vector<fs::path> files;
  for (const char *dir : {"ir/examples", "conformance/kernels"})
    for (const auto &e : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / dir))
      if (e.path().extension() == ".tir")
        files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const std::pair<tsr_bounds_mode, const char *> modes[] = {{TSR_BOUNDS_UNCHECKED, "unchecked"},
                                                            {TSR_BOUNDS_ROBUST, "robust"},
                                                            {TSR_BOUNDS_CHECKED, "checked"}};
  int written = 0;
  for (const fs::path &f : files) {
    // Too large for the portable matrix lowering (a compile error on Vulkan too; the gtest
    // checks that error).
    if (f.filename() == "matrix_large.tir")
      continue;
    ir::ParseResult pr = ir::parseFile(f.string());
    if (!pr.ok()) {
      std::fprintf(stderr, "%s: parse error\n", f.c_str());
      return 1;
    }
    for (auto [bounds, name] : modes)
      for (bool strict : {false, true}) {
        levelzero::LevelZeroCompileOptions opts;
        opts.bounds = bounds;
        opts.strict = strict;
        levelzero::LevelZeroModule out;
        std::string err;
        if (!levelzero::compileLevelZero(*pr.module, opts, &out, &err)) {
          std::fprintf(stderr, "%s (%s%s): %s\n", f.c_str(), name, strict ? ", strict" : "",
                       err.c_str());
          return 1;
        }
        std::string file = f.parent_path().filename().string() + "_" + f.stem().string() + "." +
                           name + (strict ? ".strict" : "") + ".spv";
        std::ofstream os(fs::path(argv[1]) / file, std::ios::binary);
        os.write(reinterpret_cast<const char *>(out.words.data()),
                 std::streamsize(out.words.size() * sizeof(uint32_t)));
        if (!os) {
          std::fprintf(stderr, "cannot write %s\n", file.c_str());
          return 1;
        }
        ++written;
      }
  }
  std::printf("%d modules written to %s\n", written, argv[1]);
  return 0;
}
