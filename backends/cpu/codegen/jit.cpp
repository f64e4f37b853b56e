// JIT-loading of the CPU object: ORC LLJIT, with symbols resolved from this process (libm,
// libgcc's f16 helpers, aligned_alloc/free for matrix tiles) and from libmvec.so.1, loaded
// explicitly; the matrix runtime's tsr_mx_* functions are defined as absolute symbols (they
// live in tessera_cpu_matrix, linked into this library, so they need not be exported).
//
// Must never compile anything (the object is final) and never leak LLVM errors: they become
// our error strings here.
#include "backends/cpu/codegen/cpu_codegen_impl.h"
#include "backends/cpu/matrix/matrix_abi.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Object/SymbolSize.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unistd.h>

namespace tessera::cpu {

namespace {

/// The matrix runtime's entry points (backends/cpu/matrix/matrix_abi.h), by their C names.
llvm::orc::SymbolMap matrixRuntimeSymbols(llvm::orc::LLJIT &jit) {
  auto sym = [](auto *fn) {
    return llvm::orc::ExecutorSymbolDef(llvm::orc::ExecutorAddr::fromPtr(fn),
                                        llvm::JITSymbolFlags::Exported);
  };
  return {{jit.mangleAndIntern("tsr_mx_load"), sym(&tsr_mx_load)},
          {jit.mangleAndIntern("tsr_mx_store"), sym(&tsr_mx_store)},
          {jit.mangleAndIntern("tsr_mx_fill"), sym(&tsr_mx_fill)},
          {jit.mangleAndIntern("tsr_mx_mad"), sym(&tsr_mx_mad)}};
}

// With $TESSERA_PERF_MAP set (to anything but "0"), each loaded kernel is appended to
// /tmp/perf-<pid>.map ("<address> <size> <symbol>", hex), where `perf report` finds the names
// of JIT-compiled code (docs/performance.md, "Profiling JIT kernels").
void writePerfMap(const std::vector<uint8_t> &object,
                  const std::map<std::string, uint64_t> &addresses) {
  const char *env = std::getenv("TESSERA_PERF_MAP");
  if (!env || std::string(env) == "0" || addresses.empty())
    return;
  llvm::StringRef bytes(reinterpret_cast<const char *>(object.data()), object.size());
  auto obj = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "object"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return;
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  FILE *f = std::fopen(("/tmp/perf-" + std::to_string(getpid()) + ".map").c_str(), "a");
  if (!f)
    return;
  for (const auto &[sym, size] : llvm::object::computeSymbolSizes(**obj)) {
    auto name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    auto it = addresses.find(name->str());
    if (it != addresses.end())
      std::fprintf(f, "%llx %llx %s\n", (unsigned long long)it->second, (unsigned long long)size,
                   it->first.c_str());
  }
  std::fclose(f);
}

} // namespace

bool jitLoad(CpuCompiledModule::Impl &impl, std::string &error) {
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) {
    error = "cannot create the JIT: " + llvm::toString(jit.takeError());
    return false;
  }
  llvm::orc::JITDylib &jd = (*jit)->getMainJITDylib();
  char prefix = (*jit)->getDataLayout().getGlobalPrefix();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process) {
    error = llvm::toString(process.takeError());
    return false;
  }
  jd.addGenerator(std::move(*process));
  if (llvm::Error e = jd.define(llvm::orc::absoluteSymbols(matrixRuntimeSymbols(**jit)))) {
    error = "cannot define the matrix runtime's symbols: " + llvm::toString(std::move(e));
    return false;
  }
  for (const char *lib : {"libmvec.so.1", "libm.so.6", "libgcc_s.so.1"}) {
    auto g = llvm::orc::DynamicLibrarySearchGenerator::Load(lib, prefix);
    if (!g) { // libmvec is only needed when a vector variant was used; report at lookup
      llvm::consumeError(g.takeError());
      continue;
    }
    jd.addGenerator(std::move(*g));
  }
  llvm::StringRef bytes(reinterpret_cast<const char *>(impl.object.data()), impl.object.size());
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(bytes, "tessera-cpu-object");
  if (llvm::Error e = (*jit)->addObjectFile(std::move(buf))) {
    error = "cannot add the object to the JIT: " + llvm::toString(std::move(e));
    return false;
  }
  std::map<std::string, uint64_t> addresses;
  for (const CpuKernelInfo &k : impl.kernels) {
    auto addr = (*jit)->lookup(k.symbol);
    if (!addr) {
      error = "cannot link kernel " + k.name + ": " + llvm::toString(addr.takeError());
      return false;
    }
    impl.fns[k.name] = addr->toPtr<TsrCpuWgFn>();
    addresses[k.symbol] = addr->getValue();
  }
  writePerfMap(impl.object, addresses);
  impl.jit = std::move(*jit);
  return true;
}

} // namespace tessera::cpu
