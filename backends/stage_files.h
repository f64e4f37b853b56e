// Writing a compile's stages into a `--dump-dir` folder, the same way for every codegen:
// the folder is created if needed, each stage is one file named "<index>-<stage>.<ext>", and
// a failure names the file that could not be written.
#pragma once

#include "backends/target.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

struct StageFile {
  std::string name;       // "1-llvm.ll"
  std::string_view bytes; // must stay valid during the call
};

/// False with "cannot write DIR/NAME" in `*error` at the first file that fails.
inline bool writeStageFiles(const std::string &dir, const std::vector<StageFile> &files,
                            std::string *error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec); // a failure shows as the first write failing
  for (const StageFile &file : files) {
    std::ofstream f(dir + "/" + file.name, std::ios::binary);
    f.write(file.bytes.data(), static_cast<std::streamsize>(file.bytes.size()));
    if (f)
      continue;
    if (error)
      *error = "cannot write " + dir + "/" + file.name;
    return false;
  }
  return true;
}

/// The stages of an artefact (Target::compile with keepStages), as writeStageFiles above.
inline bool writeArtefactStages(const std::string &dir, const std::vector<Stage> &stages,
                                std::string *error) {
  std::vector<StageFile> files;
  for (const Stage &stage : stages)
    files.push_back({stage.file, stage.bytes});
  return writeStageFiles(dir, files, error);
}

} // namespace tessera
