// The compile cache seen from Program (issue #10, part 5), on cpu:0 and vulkan:0: cache
// entries that are not what they claim -- another module's valid entry copied under this
// module's key, entries with a valid checksum but crafted fields (an object size of 2^64-1,
// a parameter relabelled i64, a renamed or duplicated kernel), a directory, a FIFO or a
// symbolic link to /dev/zero where the entry should be -- each cost one warning line and a
// recompile, and the kernel then computes what the fp64 interpreter computes. An unusable
// cache directory costs one line and compiles still work.
#include "runtime/tests/device_session.h"
#include "tessera/artefact.h"
#include "tessera/compile_cache.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

// Two modules whose kernels have the same name and signature but compute different things.
constexpr const char *kDouble = R"(
kernel @k(%x: buffer<f32>, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %v = load %x[%i] : f32
    %r = add %v, %v : f32
    store %r, %x[%i] : f32
  }
}
launch @k grid(2) workgroup(64) seed(3) {
  %x[100] = uniform(-4.0, 4.0)
  %n = 100
}
)";
constexpr const char *kPlusOne = R"(
kernel @k(%x: buffer<f32>, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %v = load %x[%i] : f32
    %one = const 1.0 : f32
    %r = add %v, %one : f32
    store %r, %x[%i] : f32
  }
}
launch @k grid(2) workgroup(64) seed(3) {
  %x[100] = uniform(-4.0, 4.0)
  %n = 100
}
)";

// Rewrites the payload of `entry` (stored under the key it records) through the cache
// itself, so that the checksum and key of the crafted entry are valid.
void craft(const fs::path &entry, const std::function<void(std::string &)> &edit) {
  fs::path dir = entry.parent_path().parent_path();
  std::optional<CacheKey> key = CompileCache::recordedKey(entry);
  ASSERT_TRUE(key);
  CompileCache cache(dir);
  std::optional<std::string> payload = cache.lookup(*key);
  ASSERT_TRUE(payload);
  edit(*payload);
  ASSERT_TRUE(cache.store(*key, *payload));
}

class ProgramCache : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (!session_.open(GetParam()))
      GTEST_SKIP() << GetParam() << " is not available here";
    char tmpl[] = "/tmp/tessera-program-cache-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    if (!root_.empty())
      fs::remove_all(root_);
  }

  // Compiles `source` through a fresh cache in `dir`; returns the one entry file written.
  fs::path populate(const fs::path &dir, const char *source, const char *kernel) {
    CompileCache cache(dir);
    testing::expectCorrectRun(session_.device, source, kernel, &cache);
    std::vector<fs::path> entries;
    for (const auto &e : fs::recursive_directory_iterator(dir))
      if (e.path().extension() == ".bin")
        entries.push_back(e.path());
    EXPECT_EQ(entries.size(), 1u);
    return entries.empty() ? fs::path() : entries[0];
  }

  // Runs `source` through a fresh cache on `dir` and expects: compiled (not loaded from the
  // cache), exactly one warning line containing `warning`, correct results.
  void expectRecompiledWithOneWarning(const fs::path &dir, const char *source, const char *kernel,
                                      const std::string &warning) {
    CompileCache cache(dir);
    std::vector<std::string> lines;
    cache.setWarningSink([&](const std::string &l) { lines.push_back(l); });
    ProgramStats::Source source_ = ProgramStats::Source::MemoryCache;
    testing::expectCorrectRun(session_.device, source, kernel, &cache, &source_);
    EXPECT_EQ(source_, ProgramStats::Source::Compiled);
    ASSERT_EQ(lines.size(), 1u) << (lines.empty() ? "no warning" : lines.back());
    EXPECT_NE(lines[0].find(warning), std::string::npos) << lines[0];
  }

  // Each case: a fresh cache holding `source`'s entry, crafted, then one warning and a
  // correct recompile.
  template <typename Cases>
  void expectCraftedEntriesRebuilt(const Cases &cases, const char *source) {
    for (const auto &c : cases) {
      SCOPED_TRACE(c.what);
      fs::path dir = root_ / "crafted";
      fs::remove_all(dir);
      fs::path entry = populate(dir, source, "k");
      craft(entry, c.edit);
      expectRecompiledWithOneWarning(dir, source, "k", c.warning);
    }
  }

  testing::DeviceSession session_;
  fs::path root_;
};

TEST_P(ProgramCache, ValidEntryOfASameSignatureKernelCopiedUnderAnotherKeyIsNotRun) {
  fs::path a = populate(root_ / "a", kDouble, "k");
  fs::path b = populate(root_ / "b", kPlusOne, "k");
  ASSERT_NE(a.filename(), b.filename()) << "different modules must have different keys";
  fs::copy_file(a, b, fs::copy_options::overwrite_existing);
  expectRecompiledWithOneWarning(root_ / "b", kPlusOne, "k", "stored under another key");
  // The rebuilt entry is B's own: the next run loads it from disk, silently.
  CompileCache cache(root_ / "b");
  std::vector<std::string> lines;
  cache.setWarningSink([&](const std::string &l) { lines.push_back(l); });
  ProgramStats::Source source = ProgramStats::Source::Compiled;
  testing::expectCorrectRun(session_.device, kPlusOne, "k", &cache, &source);
  EXPECT_EQ(source, ProgramStats::Source::DiskCache);
  EXPECT_TRUE(lines.empty());
}

// Each kernel line of a payload (the .tsrx container of every target: "kernel name shared
// push subgroup n type[:offset]...") as whitespace-separated tokens.
void editKernelLines(std::string &payload,
                     const std::function<void(std::vector<std::string> &)> &f) {
  size_t pos = 0;
  while ((pos = payload.find("\nkernel ", pos)) != std::string::npos) {
    size_t end = payload.find('\n', pos + 1);
    std::istringstream in(payload.substr(pos + 1, end - pos - 1));
    std::vector<std::string> tokens;
    for (std::string t; in >> t;)
      tokens.push_back(t);
    f(tokens);
    std::string line;
    for (const auto &t : tokens)
      line += (line.empty() ? "" : " ") + t;
    payload.replace(pos + 1, end - pos - 1, line);
    pos = pos + 1 + line.size();
  }
}

// One crafted entry: what it is, the edit of a valid payload, the warning it must cost.
struct CraftCase {
  const char *what;
  std::function<void(std::string &)> edit;
  const char *warning;
};

TEST_P(ProgramCache, CraftedFieldsWithAValidChecksumAreMissesThatRebuild) {
  std::vector<CraftCase> cases = {
      {"object size 2^64-1",
       [&](std::string &p) {
         const char *word = "\nbytes ";
         size_t at = p.find(word) + std::strlen(word);
         p.replace(at, p.find('\n', at) - at, "18446744073709551615");
       },
       "not an artefact container"},
      {"another target's format",
       [&](std::string &p) { p.replace(p.find(' ') + 1, p.find('\n') - p.find(' ') - 1, "x"); },
       "its format is 'x'"},
      {"parameter %n relabelled i64",
       [](std::string &p) {
         editKernelLines(p, [](std::vector<std::string> &t) {
           std::string &last = t.back(); // %n: "1.3.0.0" (CPU) or "1.3.0.0:8" (Vulkan)
           size_t dot = last.find('.');
           last.replace(dot + 1, 1, std::to_string(int(ir::Scalar::I64)));
         });
       },
       "parameters of kernel @k differ"},
      {"kernel renamed", [&](std::string &p) { editKernelLines(p, [&](auto &t) { t[1] = "j"; }); },
       "lacks kernel @k"},
      {"kernel listed twice",
       [](std::string &p) {
         size_t start = p.find("\nkernel ") + 1, end = p.find('\n', start) + 1;
         p.insert(end, p.substr(start, end - start));
       },
       "lists 2 kernels, the module has 1"},
  };
  expectCraftedEntriesRebuilt(cases, kDouble);
}

// Shared memory and a loop to a parameter (on vulkan:0 the loop gets the control buffer that
// reports a cut loop): every field of the kernel table the driver trusts at launch is used.
constexpr const char *kStaged = R"(
kernel @k(%x: buffer<f32>, %n: i32) {
  %s = shared_alloc : shared<f32, 256>
  %t = local_id.x : i32
  %i = global_id.x : i32
  %zero = const 0 : i32
  %one = const 1 : i32
  %fz = const 0.0 : f32
  %in = cmp.slt %i, %n : i32
  %v = if %in -> (f32) {
    %a = load %x[%i] : f32
    yield %a
  } else {
    yield %fz
  }
  store %v, %s[%t] : f32
  barrier
  %r = for %j = %zero to %n step %one iter(%acc = %fz) : i32 {
    %w = load %s[%t] : f32
    %a2 = add %acc, %w : f32
    yield %a2
  }
  if %in {
    store %r, %x[%i] : f32
  }
}
launch @k grid(2) workgroup(64) seed(3) {
  %x[100] = uniform(-4.0, 4.0)
  %n = 100
}
)";

TEST_P(ProgramCache, CraftedLaunchFieldsWithAValidChecksumAreMissesThatRebuild) {
  // What the driver takes from the table at launch (found by an adversarial round: a shared
  // size of 0 crashed cpu:0, swapped push offsets and a dropped control line gave wrong
  // results on vulkan:0) must be what the kernel compiles to.
  bool cpu = GetParam().rfind("cpu", 0) == 0;
  std::vector<CraftCase> cases = {
      {"subgroup size halved",
       [](std::string &p) {
         editKernelLines(p, [](std::vector<std::string> &t) {
           t[4] = std::to_string(std::max(1, std::stoi(t[4]) / 2));
         });
       },
       "its subgroup size of @k is"},
  };
  if (cpu) {
    cases.push_back({"shared memory 0",
                     [](std::string &p) {
                       editKernelLines(p, [](std::vector<std::string> &t) { t[2] = "0"; });
                     },
                     "0 bytes of shared memory, the kernel's arrays take 1024"});
    cases.push_back({"push-constant offsets added",
                     [](std::string &p) {
                       editKernelLines(p, [](std::vector<std::string> &t) {
                         for (size_t i = 6; i < t.size(); ++i)
                           t[i] += ":0";
                       });
                     },
                     "push constants or a control binding"});
  } else {
    cases.push_back({"push-constant offset of %n moved",
                     [](std::string &p) {
                       editKernelLines(p, [](std::vector<std::string> &t) {
                         std::string &last = t.back(); // "1.3.0.0:0"
                         last = last.substr(0, last.find(':')) + ":4";
                       });
                     },
                     "push-constant layout of @k"});
    cases.push_back({"control line dropped",
                     [](std::string &p) {
                       size_t at = p.find("\ncontrol ");
                       ASSERT_NE(at, std::string::npos) << "the loop has no control buffer";
                       p.erase(at, p.find('\n', at + 1) - at);
                     },
                     "control binding of @k is not the one the image declares"});
    cases.push_back({"control binding moved",
                     [](std::string &p) {
                       size_t at = p.find("\ncontrol ");
                       ASSERT_NE(at, std::string::npos);
                       at += std::strlen("\ncontrol ");
                       p.replace(at, p.find('\n', at) - at, "3");
                     },
                     "control binding of @k is not the one the image declares"});
  }
  expectCraftedEntriesRebuilt(cases, kStaged);
}

TEST_P(ProgramCache, EntriesThatAreNotFilesAreMissesThatRebuild) {
  struct Case {
    const char *what;
    std::function<void(const fs::path &)> make;
    const char *warning;
  };
  const Case cases[] = {
      {"directory", [](const fs::path &p) { fs::create_directories(p / "x"); },
       "it is a directory"},
      {"fifo", [](const fs::path &p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); },
       "it is not a regular file"},
      {"symlink to /dev/zero", [](const fs::path &p) { fs::create_symlink("/dev/zero", p); },
       "it is a symbolic link"},
  };
  fs::path entry = populate(root_ / "scratch", kDouble, "k");
  fs::path relative = fs::relative(entry, root_ / "scratch");
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    fs::path dir = root_ / "bad";
    fs::remove_all(dir);
    fs::create_directories((dir / relative).parent_path());
    c.make(dir / relative);
    expectRecompiledWithOneWarning(dir, kDouble, "k", c.warning);
  }
}

TEST_P(ProgramCache, UnusableCacheDirectoryTurnsDiskCachingOffAndCompilesStillWork) {
  fs::path file = root_ / "a-file";
  std::ofstream(file) << "not a directory";
  expectRecompiledWithOneWarning(file, kPlusOne, "k", "caching on disk is off");
}

INSTANTIATE_TEST_SUITE_P(Devices, ProgramCache, ::testing::Values("cpu:0", "vulkan:0"),
                         testing::backendOf);

} // namespace
} // namespace tessera
