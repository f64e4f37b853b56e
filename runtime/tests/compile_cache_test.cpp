// Compile cache and its XXH3-128 content hash: xxHash's own test vectors, memory and disk
// hits, detection of truncated / corrupted / foreign / old-format entries, entries that are
// not regular files (a directory, a FIFO, a symbolic link to /dev/zero, an oversized file),
// were copied under another key or collide with another key's hash, unusable cache
// directories, and many processes sharing one cache directory.
#include "tessera/compile_cache.h"
#include "tessera/content_hash.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera {
namespace {

// xxHash's sanity buffer (tests/sanity_test_vectors.h in the xxHash sources): byte i is the
// top byte of PRIME32_1 * PRIME64_1^i (mod 2^64).
std::string sanityBuffer(size_t n) {
  std::string b(n, '\0');
  uint64_t g = 2654435761u;
  for (size_t i = 0; i < n; ++i) {
    b[i] = char(g >> 56);
    g *= 11400714785074694797ull;
  }
  return b;
}

// XXH3_128bits (seed 0) of prefixes of the sanity buffer, from xxHash's own reference vectors
// (XXH3_128bits_testdata in sanity_test_vectors.h; high 64 bits first, as `xxhsum -H2`
// prints them), chosen to cover each code path: empty, 1-16, 17-128, 129-240 and long input
// (several stripes and blocks). No xxhsum or python xxhash is installed here to recompute
// them; "abc" is the commonly published vector that several independent ports agree on.
TEST(ContentHash, Xxh3_128ReferenceVectors) {
  const std::pair<size_t, const char *> vectors[] = {
      {0, "99aa06d3014798d86001c324468d497f"},    {1, "a6cd5e9392000f6ac44bdff4074eecdb"},
      {16, "c68c368ecf8a9c05562980258a998629"},   {17, "955fa78643ed3669abbc12d11973d7db"},
      {100, "9b50b05817ab158e5fcbc2e3295f2476"},  {240, "aa4202daa2769dc85c9aae94c8ebe5a0"},
      {241, "99a80ecf0ecfc647c5a639ecd2030e5e"},  {1000, "9b857abf662e5a25aca2dde0f1951b9a"},
      {4161, "06e30da044fbc01eefb6ccb06c0b206a"},
  };
  std::string buf = sanityBuffer(4161);
  for (auto [n, hex] : vectors)
    EXPECT_EQ(contentHashHex(std::string_view(buf).substr(0, n)), hex) << n << " bytes";
  EXPECT_EQ(contentHashHex("abc"), "06b05ab6733a618578af5f94892f3950");
}

TEST(ContentHash, StreamingEqualsOneShotAndFieldsAreLengthPrefixed) {
  std::string buf = sanityBuffer(4161);
  ContentHash h;
  for (size_t at = 0; at < buf.size(); at += 37)
    h.update(std::string_view(buf).substr(at, 37));
  EXPECT_EQ(h.hexDigest(), "06e30da044fbc01eefb6ccb06c0b206a");
  std::string framed("\x03\0\0\0\0\0\0\0abc", 11);
  EXPECT_EQ(ContentHash().field("abc").hexDigest(), contentHashHex(framed));
  std::string appended;
  appendField(appended, "abc");
  EXPECT_EQ(appended, framed);
}

TEST(CacheKey, DependsOnEveryFieldAndTheirBoundaries) {
  CacheKey k = makeCacheKey("0.1", "cpu", "opt=3", "kernel @k() {}");
  EXPECT_EQ(k.digest.size(), 32u);
  EXPECT_EQ(k.digest, contentHashHex(k.text)) << "the digest names the text";
  std::string text;
  for (const char *f : {"tessera-compile-cache-v2", "0.1", "cpu", "opt=3", "kernel @k() {}"})
    appendField(text, f);
  EXPECT_EQ(k.text, text);
  EXPECT_EQ(k, makeCacheKey("0.1", "cpu", "opt=3", "kernel @k() {}"));
  EXPECT_NE(k.digest, makeCacheKey("0.2", "cpu", "opt=3", "kernel @k() {}").digest);
  EXPECT_NE(k.digest, makeCacheKey("0.1", "ptx", "opt=3", "kernel @k() {}").digest);
  EXPECT_NE(k.digest, makeCacheKey("0.1", "cpu", "opt=2", "kernel @k() {}").digest);
  EXPECT_NE(k.digest, makeCacheKey("0.1", "cpu", "opt=3", "kernel @j() {}").digest);
  EXPECT_NE(makeCacheKey("a", "bc", "", "").digest, makeCacheKey("ab", "c", "", "").digest);
}

class CacheDir : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::filesystem::path dir;
  CacheKey key = makeCacheKey("v", "cpu", "o", "ir");
};

TEST_F(CacheDir, MemoryOnlyCache) {
  CompileCache c({});
  EXPECT_FALSE(c.lookup(key));
  EXPECT_TRUE(c.store(key, "object bytes"));
  EXPECT_EQ(c.lookup(key), "object bytes");
  EXPECT_EQ(c.stats().memoryHits, 1u);
  EXPECT_EQ(c.stats().misses, 1u);
}

TEST_F(CacheDir, DiskEntrySurvivesANewInstance) {
  std::string payload("\0binary\xff payload", 16);
  {
    CompileCache c(dir);
    std::string err;
    ASSERT_TRUE(c.store(key, payload, &err)) << err;
  }
  CompileCache c(dir);
  auto got = c.lookup(key);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, payload);
  EXPECT_EQ(c.stats().diskHits, 1u);
  c.lookup(key);
  EXPECT_EQ(c.stats().memoryHits, 1u);
}

void rewrite(const std::filesystem::path &p, const std::function<void(std::string &)> &edit) {
  std::ifstream in(p, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  edit(data);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

TEST_F(CacheDir, TruncatedCorruptedAndForeignEntriesAreRejectedAndRebuilt) {
  const std::function<void(std::string &)> edits[] = {
      [](std::string &d) { d.resize(d.size() - 3); },  // truncated payload
      [](std::string &d) { d.resize(10); },            // truncated header
      [](std::string &d) { d[d.size() - 1] ^= 0x40; }, // flipped payload bit
      [](std::string &d) { d[0] = 'X'; },              // not our magic
      [](std::string &d) { d[8] = 7; },                // another format version
      [](std::string &d) { d.clear(); },               // empty file
  };
  int i = 0;
  for (const auto &edit : edits) {
    SCOPED_TRACE("edit " + std::to_string(i++));
    {
      CompileCache c(dir);
      ASSERT_TRUE(c.store(key, "the real object"));
    }
    std::filesystem::path p = CompileCache(dir).entryPath(key);
    rewrite(p, edit);
    CompileCache c(dir);
    EXPECT_FALSE(c.lookup(key)) << "a damaged entry was loaded";
    EXPECT_EQ(c.stats().corruptEntries, 1u);
    EXPECT_FALSE(std::filesystem::exists(p)) << "the damaged entry must be removed";
    ASSERT_TRUE(c.store(key, "the real object"));
    c.clearMemory();
    EXPECT_EQ(c.lookup(key), "the real object");
  }
}

// Collects the cache's warning lines.
struct Warnings {
  explicit Warnings(CompileCache &c) {
    c.setWarningSink([this](const std::string &line) { lines.push_back(line); });
  }
  std::vector<std::string> lines;
};

TEST_F(CacheDir, UnwritableDirectoryOnlyCostsTheDiskCopy) {
  std::filesystem::path file = dir / "not-a-dir";
  std::ofstream(file) << "x";
  for (const std::filesystem::path &bad : {file, file / "sub"}) {
    SCOPED_TRACE(bad.string());
    CompileCache c(bad);
    Warnings w(c);
    std::string err;
    EXPECT_FALSE(c.lookup(key));
    EXPECT_FALSE(c.store(key, "payload", &err));
    EXPECT_NE(err.find("is unusable"), std::string::npos) << err;
    EXPECT_EQ(c.lookup(key), "payload"); // memory still works
    c.store(key, "payload");
    ASSERT_EQ(w.lines.size(), 1u) << "one line, however often the disk is needed";
    EXPECT_NE(w.lines[0].find("compile cache: directory " + bad.string() + " is unusable"),
              std::string::npos)
        << w.lines[0];
    EXPECT_NE(w.lines[0].find("caching on disk is off"), std::string::npos) << w.lines[0];
  }
}

TEST_F(CacheDir, AShardThatIsAFileCostsOneWarningNotSilence) {
  // The directory is usable, but <dir>/<digest[0:2]> is a file: no entry of that shard can
  // be written. Every run recompiled and nothing said so (adversarial round 5).
  std::filesystem::path shard = dir / key.digest.substr(0, 2);
  std::ofstream(shard) << "x";
  CompileCache c(dir);
  Warnings w(c);
  std::string err;
  EXPECT_FALSE(c.store(key, "payload", &err));
  EXPECT_NE(err.find("cannot create " + shard.string()), std::string::npos) << err;
  EXPECT_EQ(c.lookup(key), "payload"); // memory still works
  c.store(key, "payload");
  ASSERT_EQ(w.lines.size(), 1u) << "one line, however often the store fails";
  EXPECT_NE(w.lines[0].find("compiled modules are not kept on disk"), std::string::npos)
      << w.lines[0];
  EXPECT_TRUE(std::filesystem::is_regular_file(shard)) << "not the cache's to remove";
}

TEST_F(CacheDir, DirectoryWithoutWritePermissionTurnsDiskCachingOff) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root writes anywhere: permissions cannot be tested";
  std::filesystem::path ro = dir / "ro";
  std::filesystem::create_directory(ro);
  std::filesystem::permissions(ro, std::filesystem::perms::owner_read |
                                       std::filesystem::perms::owner_exec);
  CompileCache c(ro);
  Warnings w(c);
  EXPECT_FALSE(c.store(key, "payload"));
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("cannot write in it"), std::string::npos) << w.lines[0];
  std::filesystem::permissions(ro, std::filesystem::perms::owner_all);
}

// Things that are not entry files at an entry's path: each is a miss with one warning line
// naming what it is, never a hang, a huge read or an exception; then a store replaces it
// (except a directory, which is never removed) and the next lookup hits.
TEST_F(CacheDir, EntriesThatAreNotRegularFilesAreMissesWithOneWarning) {
  struct Case {
    const char *what;
    std::function<void(const std::filesystem::path &)> make;
    const char *reason;
    bool replaceable;
  };
  const Case cases[] = {
      {"directory", [](const auto &p) { std::filesystem::create_directories(p / "x"); },
       "it is a directory", false},
      {"fifo", [](const auto &p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); },
       "it is not a regular file", true},
      {"symlink to /dev/zero",
       [](const auto &p) { std::filesystem::create_symlink("/dev/zero", p); },
       "it is a symbolic link", true},
      {"oversized file",
       [](const auto &p) {
         std::ofstream(p).close();
         std::filesystem::resize_file(p, CompileCache::kMaxEntryBytes + 1); // sparse
       },
       "it has 268435457 bytes, more than the cache's limit of 268435456", true},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    std::filesystem::remove_all(dir);
    std::filesystem::path p = CompileCache(dir).entryPath(key);
    std::filesystem::create_directories(p.parent_path());
    c.make(p);
    CompileCache cache(dir);
    Warnings w(cache);
    EXPECT_FALSE(cache.lookup(key));
    ASSERT_EQ(w.lines.size(), 1u);
    EXPECT_NE(w.lines[0].find("ignoring entry " + p.string() + ": " + c.reason), std::string::npos)
        << w.lines[0];
    EXPECT_EQ(cache.stats().corruptEntries, 1u);
    EXPECT_EQ(cache.store(key, "the real object"), c.replaceable);
    CompileCache fresh(dir);
    Warnings w2(fresh);
    EXPECT_EQ(fresh.lookup(key).has_value(), c.replaceable);
    EXPECT_EQ(w2.lines.size(), c.replaceable ? 0u : 1u);
  }
}

// An entry is bound to the key it was stored under: a valid entry copied to another key's
// path (same checksum, same format) is a miss, not the other module's code.
TEST_F(CacheDir, ValidEntryCopiedUnderAnotherKeyIsAMiss) {
  CacheKey other = makeCacheKey("v", "cpu", "o", "other ir");
  {
    CompileCache c(dir);
    ASSERT_TRUE(c.store(key, "module A"));
  }
  CompileCache c(dir);
  std::filesystem::create_directories(c.entryPath(other).parent_path());
  std::filesystem::copy_file(c.entryPath(key), c.entryPath(other));
  Warnings w(c);
  EXPECT_FALSE(c.lookup(other));
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("stored under another key (" + key.digest.substr(0, 16)),
            std::string::npos)
      << w.lines[0];
  EXPECT_EQ(c.lookup(key), "module A"); // the original is untouched
}

// XXH3 does not resist crafted collisions, so a key whose text differs from the recorded one
// must miss even when the digests are equal: in memory, and on disk with one warning line.
TEST_F(CacheDir, AnotherKeyWithTheSameDigestIsAMiss) {
  CacheKey forged{"another module's key text", key.digest};
  CompileCache c(dir);
  ASSERT_TRUE(c.store(key, "module A"));
  Warnings w(c);
  EXPECT_FALSE(c.lookup(forged)) << "the memory entry was returned for another key";
  ASSERT_EQ(w.lines.size(), 1u) << "the disk entry was read too, and refused";
  EXPECT_NE(w.lines[0].find("records another key with the same hash"), std::string::npos)
      << w.lines[0];
  ASSERT_TRUE(c.store(forged, "module B"));
  CompileCache fresh(dir);
  EXPECT_EQ(fresh.lookup(forged), "module B");
  EXPECT_FALSE(fresh.lookup(key)) << "an entry was returned for another key";
}

// An entry in the previous format (version 2: SHA-256, the key's hex digest in place of its
// text) is refused by its version field, never misread, even under a current entry's name.
TEST_F(CacheDir, PreviousFormatEntryIsRefusedByItsVersion) {
  std::string v2("TSRCACHE\x02\0\0\0\x40\0\0\0", 16);
  v2 += std::string(64, 'a') + std::string("\x07\0\0\0\0\0\0\0", 8) + std::string(32, 's');
  v2 += "payload";
  std::filesystem::path p = CompileCache(dir).entryPath(key);
  EXPECT_EQ(p.filename().string(), key.digest + ".bin");
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << v2;
  CompileCache c(dir);
  Warnings w(c);
  EXPECT_FALSE(c.lookup(key));
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("it has format version 2, not 3"), std::string::npos) << w.lines[0];
}

TEST_F(CacheDir, RecordedKeyReadsTheKeyBackFromAnEntry) {
  CompileCache c(dir);
  ASSERT_TRUE(c.store(key, "payload"));
  EXPECT_EQ(CompileCache::recordedKey(c.entryPath(key)), key);
  EXPECT_FALSE(CompileCache::recordedKey(dir / "absent.bin"));
}

TEST_F(CacheDir, RejectDropsTheEntryWithOneWarning) {
  {
    CompileCache c(dir);
    ASSERT_TRUE(c.store(key, "payload"));
  }
  CompileCache c(dir);
  Warnings w(c);
  ASSERT_TRUE(c.lookup(key));
  c.reject(key, "its kernels differ");
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find(": its kernels differ; recompiling"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(c.entryPath(key)));
  EXPECT_FALSE(c.lookup(key));
}

TEST_F(CacheDir, PayloadsLargerThanAnEntryStayInMemory) {
  CompileCache c(dir);
  std::string big(CompileCache::kMaxEntryBytes, 'x');
  std::string err;
  EXPECT_FALSE(c.store(key, big, &err));
  EXPECT_NE(err.find("larger than an entry may be"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(c.entryPath(key)));
  EXPECT_EQ(c.lookup(key)->size(), big.size());
}

TEST_F(CacheDir, RejectsKeysThatAreNotHashes) {
  CompileCache c(dir);
  std::string err;
  EXPECT_FALSE(c.store(CacheKey{"text", "../../etc/passwd"}, "x", &err));
  EXPECT_NE(err.find("invalid key"), std::string::npos);
}

// Several processes hammer the same keys: every read is either a miss or the exact payload.
TEST_F(CacheDir, ConcurrentProcessesNeverSeeAPartialEntry) {
  constexpr int kProcs = 4, kKeys = 8, kRounds = 60;
  auto payloadFor = [](int k) { return std::string(4096 + k * 977, static_cast<char>('a' + k)); };
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;
      for (int r = 0; r < kRounds; ++r)
        for (int k = 0; k < kKeys; ++k) {
          CompileCache c(dir); // fresh instance: always go to disk
          CacheKey kk = makeCacheKey("v", "cpu", std::to_string(k), "ir");
          if (auto got = c.lookup(kk); got && *got != payloadFor(k))
            ++bad;
          bad += c.stats().corruptEntries > 0;
          c.store(kk, payloadFor(k));
        }
      _exit(bad == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a process read a bad entry";
  }
  for (const auto &e : std::filesystem::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "leftover " << e.path();
}

} // namespace
} // namespace tessera
