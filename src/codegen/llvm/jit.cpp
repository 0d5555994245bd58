#include "codegen/llvm/jit.h"

#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/jit_engine.h"
#include "codegen/llvm/object_cache.h"
#include "support/error.h"
#include "support/hash.h"

namespace dietcode::codegen {

namespace orc = llvm::orc;

namespace {

std::string message(llvm::Error e) {
  return llvm::toString(std::move(e));
}

template <typename T>
T unwrap(llvm::Expected<T> value, const char* what) {
  if (!value)
    internal_error(__FILE__, __LINE__, std::string(what) + ": " + message(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error e, const char* what) {
  if (e) internal_error(__FILE__, __LINE__, std::string(what) + ": " + message(std::move(e)));
}

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // Loop strength reduction is half of instruction selection's time on our modules
    // (llc -time-passes) and buys nothing measurable: the micro-kernel already indexes
    // its panels with base + index addressing. Without it the median compile time drops
    // below 20 ms. (A process-wide LLVM option; this process owns its LLVM.)
    auto& options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("disable-lsr"); it != options.end())
      static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(true);
  });
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> make_target_machine(const CpuTarget& t) {
  initialize_llvm();
  std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) internal_error(__FILE__, __LINE__, "no LLVM target for " + triple + ": " + error);
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  return std::unique_ptr<llvm::TargetMachine>(
      target->createTargetMachine(triple, t.cpu, t.features, options, llvm::Reloc::PIC_,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive, /*JIT=*/true));
}

void set_target(llvm::Module& m, const llvm::TargetMachine& tm) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
}

namespace {

// The IR pipeline before instruction selection. The micro-kernel is already explicit
// vector code with its accumulators in SSA values, so the full O2 pipeline buys nothing
// measurable (bench_first_numbers: within noise at every M) and costs ~4x the compile
// time (median 84 ms vs 19 ms per kernel). What remains: common subexpressions of the
// index arithmetic, and hoisting loop invariants out of the block loops.
constexpr const char* kPassPipeline = "function(early-cse,simplifycfg,loop-mssa(licm))";

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  check(pb.parsePassPipeline(mpm, kPassPipeline), "parsing the pass pipeline");
  mpm.run(m, mam);
}

// A TargetMachine is not thread-safe: each thread that optimizes or compiles has its own.
llvm::TargetMachine& thread_target_machine() {
  thread_local std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(host_target());
  return *tm;
}

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, const lower::LoweredKernel& k,
                                           const CpuTarget& t, llvm::TargetMachine& tm,
                                           const std::string& prefix, bool optimized) {
  std::unique_ptr<llvm::Module> m = emit_module(ctx, k, t, prefix);
  set_target(*m, tm);
  if (optimized) optimize(*m, tm);
  return m;
}

// The process-wide JIT.
class Engine {
 public:
  static Engine& get() {
    static Engine engine;
    return engine;
  }
  orc::LLJIT& jit() { return *jit_; }
  std::string next_prefix() { return "dc" + std::to_string(counter_++) + "_"; }

  void define_symbols(const std::vector<JitSymbol>& symbols) {
    std::lock_guard<std::mutex> lock(symbols_mutex_);
    orc::MangleAndInterner mangle(jit_->getExecutionSession(), jit_->getDataLayout());
    orc::SymbolMap fresh;
    for (const JitSymbol& s : symbols) {
      DC_INTERNAL_CHECK(s.address != nullptr, "JIT symbol {} has no address", s.name);
      auto [it, inserted] = defined_.emplace(s.name, s.address);
      if (!inserted) {
        DC_INTERNAL_CHECK(it->second == s.address, "JIT symbol {} defined at two addresses",
                          s.name);
        continue;
      }
      fresh[mangle(s.name)] = orc::ExecutorSymbolDef(orc::ExecutorAddr::fromPtr(s.address),
                                                     llvm::JITSymbolFlags::Exported);
    }
    if (!fresh.empty())
      check(jit_->getMainJITDylib().define(orc::absoluteSymbols(std::move(fresh))),
            "defining absolute symbols");
  }

 private:
  Engine() {
    initialize_llvm();
    const CpuTarget& host = host_target();
    auto jtmb = unwrap(orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
    jtmb.setCPU(host.cpu);
    jtmb.getFeatures() = llvm::SubtargetFeatures(host.features);
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    // Modules compile on the threads that look them up (several at once: Module::compile
    // builds its kernels in parallel), each with a TargetMachine of its own.
    jit_ = unwrap(orc::LLJITBuilder()
                      .setJITTargetMachineBuilder(jtmb)
                      .setSupportConcurrentCompilation(true)
                      .create(),
                  "creating LLJIT");
    // Names generated code calls resolve to jit_define_symbols' definitions first, then
    // to the process (e.g. libm's expf).
    orc::JITDylib& jd = jit_->getMainJITDylib();
    jd.addGenerator(unwrap(orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                               jit_->getDataLayout().getGlobalPrefix()),
                           "exposing process symbols"));
  }

  std::unique_ptr<orc::LLJIT> jit_;
  std::atomic<int64_t> counter_{0};
  std::mutex symbols_mutex_;
  std::map<std::string, void*> defined_;  // by jit_define_symbols, unmangled
};

class OrcJitModule : public JitModule {
 public:
  explicit OrcJitModule(orc::ResourceTrackerSP tracker) : tracker_(std::move(tracker)) {}
  ~OrcJitModule() override {
    if (llvm::Error e = tracker_->remove()) llvm::consumeError(std::move(e));  // process exit path
  }
  void* lookup(const std::string& name) const override {
    return unwrap(Engine::get().jit().lookup(name), "looking up a JIT symbol").toPtr<void*>();
  }

 private:
  orc::ResourceTrackerSP tracker_;
};

// A kernel in a JITDylib of its own (a cached object): destroying it removes the dylib.
class OrcJitDylibModule : public JitModule {
 public:
  explicit OrcJitDylibModule(orc::JITDylib& jd) : jd_(jd) {}
  ~OrcJitDylibModule() override {
    if (llvm::Error e = Engine::get().jit().getExecutionSession().removeJITDylib(jd_))
      llvm::consumeError(std::move(e));  // process exit path
  }
  void* lookup(const std::string& name) const override {
    return unwrap(Engine::get().jit().lookup(jd_, name), "looking up a JIT symbol").toPtr<void*>();
  }

 private:
  orc::JITDylib& jd_;
};

class OrcJitCode : public JitCode {
 public:
  OrcJitCode(std::unique_ptr<JitModule> module, ComputeFn compute, ComputeFn prepack)
      : module_(std::move(module)), compute_(compute), prepack_(prepack) {}
  ComputeFn compute() const override { return compute_; }
  ComputeFn prepack() const override { return prepack_; }

 private:
  std::unique_ptr<JitModule> module_;
  ComputeFn compute_, prepack_;
};

}  // namespace

void jit_define_symbols(const std::vector<JitSymbol>& symbols) {
  Engine::get().define_symbols(symbols);
}

std::string jit_unique_prefix() {
  return Engine::get().next_prefix();
}

void set_host_target(llvm::Module& m) {
  orc::LLJIT& jit = Engine::get().jit();
  m.setDataLayout(jit.getDataLayout());
  m.setTargetTriple(jit.getTargetTriple().str());
}

std::unique_ptr<JitModule> jit_add_module(std::unique_ptr<llvm::Module> m,
                                          std::unique_ptr<llvm::LLVMContext> ctx) {
  orc::LLJIT& jit = Engine::get().jit();
  orc::ResourceTrackerSP tracker = jit.getMainJITDylib().createResourceTracker();
  check(jit.addIRModule(tracker, orc::ThreadSafeModule(std::move(m), std::move(ctx))),
        "adding a module to the JIT");
  return std::make_unique<OrcJitModule>(std::move(tracker));
}

namespace {

// Off without a cache in scope on this thread, or without a build ID for the key.
bool caching_objects() {
  return !object_cache_dir().empty() && !program_build_id().empty();
}

// Renames the functions named kCachePlaceholder + name to prefix + name.
void rename_placeholders(llvm::Module& m, const std::string& prefix) {
  const size_t placeholder = std::strlen(kCachePlaceholder);
  for (llvm::Function& f : m)
    if (f.getName().starts_with(kCachePlaceholder))
      f.setName(prefix + f.getName().substr(placeholder).str());
}

}  // namespace

namespace {

// The cache's key of a module known by its source digest (jit_compile): the digest, the
// CPU and this build, in a space of their own (tagged), apart from keys over bitcode.
uint64_t source_key(uint64_t source_digest, bool optimized) {
  const CpuTarget& host = host_target();
  Fnv1a h;
  h.add(program_build_id());
  h.add(host.cpu);
  h.add(host.features);
  h.add(optimized ? "optimized" : "as emitted");
  h.add("source digest");
  h.add(fmt::format("{:016x}", source_digest));
  return h.value();
}

// The symbol name prefix of a cached object (its functions: name + "_" + function).
std::string cached_name(uint64_t key) {
  return fmt::format("dc{:016x}", key);
}

// Links a cached object into a JITDylib of its own (linked against the main one, for the
// runtime's symbols), so that equal modules loaded twice in one process do not clash.
NamedJitModule add_cached_object(const std::string& name, const std::string& object) {
  Engine& engine = Engine::get();
  orc::LLJIT& jit = engine.jit();
  llvm::Expected<orc::JITDylib&> created = jit.createJITDylib(engine.next_prefix() + name);
  if (!created)
    internal_error(__FILE__, __LINE__, "creating a JITDylib: " + message(created.takeError()));
  orc::JITDylib& jd = *created;
  jd.addToLinkOrder(jit.getMainJITDylib());
  check(jit.addObjectFile(jd, llvm::MemoryBuffer::getMemBufferCopy(object, name)),
        "adding a cached object to the JIT");
  return {std::make_unique<OrcJitDylibModule>(jd), name + "_"};
}

// jit_add_named_module, under `key` when given (else the key over the module's bitcode);
// `read_first`: look for the object in the cache before compiling (false: the caller has).
NamedJitModule add_named_module(std::unique_ptr<llvm::Module> m,
                                std::unique_ptr<llvm::LLVMContext> ctx, bool optimized,
                                std::optional<uint64_t> given_key, bool read_first = true) {
  NamedJitModule out;
  if (!caching_objects()) {
    out.prefix = jit_unique_prefix();
    rename_placeholders(*m, out.prefix);
    llvm::TargetMachine& tm = thread_target_machine();
    set_target(*m, tm);
    if (optimized) optimize(*m, tm);
    out.module = jit_add_module(std::move(m), std::move(ctx));
    return out;
  }
  const std::string& dir = object_cache_dir();
  uint64_t key = 0;
  if (given_key) {
    key = *given_key;
  } else {
    const CpuTarget& host = host_target();
    // Local names carry the lowering's variable numbering, which differs from one compile
    // to the next: drop them (the code does not change) and name internal functions by
    // their place, so that the same module writes the same bitcode in every process.
    int64_t internal = 0;
    for (llvm::Function& f : *m) {
      if (f.hasLocalLinkage())
        f.setName(fmt::format("{}internal{}", kCachePlaceholder, internal++));
      for (llvm::Argument& a : f.args()) a.setName("");
      for (llvm::BasicBlock& bb : f) {
        bb.setName("");
        for (llvm::Instruction& i : bb) i.setName("");
      }
    }
    // The key: the module as emitted (before optimization) under the placeholder prefix,
    // the CPU, and this build of the program. Hashed as bitcode: the same module in the
    // same build writes the same bytes, ~10x faster than printing it as text (which was
    // most of a cached load's time).
    std::string bitcode;
    {
      llvm::raw_string_ostream os(bitcode);
      llvm::WriteBitcodeToFile(*m, os);
    }
    Fnv1a h;
    h.add(program_build_id());
    h.add(host.cpu);
    h.add(host.features);
    h.add(optimized ? "optimized" : "as emitted");
    h.add(bitcode);
    key = h.value();
  }

  // Symbols are named after the key.
  const std::string name = cached_name(key);
  std::optional<std::string> object;
  if (read_first) object = read_cached_object(dir, key, name);
  if (!object) {
    rename_placeholders(*m, name + "_");
    llvm::TargetMachine& tm = thread_target_machine();
    set_target(*m, tm);
    if (optimized) optimize(*m, tm);
    llvm::SmallString<0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      internal_error(__FILE__, __LINE__, "this LLVM target cannot emit objects");
    pm.run(*m);
    object = std::string(buffer.str());
    write_cached_object(dir, key, name, *object);
  }
  m.reset();  // before its context
  return add_cached_object(name, *object);
}

}  // namespace

NamedJitModule jit_add_named_module(std::unique_ptr<llvm::Module> m,
                                    std::unique_ptr<llvm::LLVMContext> ctx, bool optimized) {
  return add_named_module(std::move(m), std::move(ctx), optimized, std::nullopt);
}

std::unique_ptr<JitCode> jit_compile(const lower::LoweredKernel& k, uint64_t source_digest) {
  NamedJitModule compiled;
  std::optional<uint64_t> key;
  if (source_digest != 0 && caching_objects()) {
    // Known by its source: a cached object is linked without emitting the module.
    key = source_key(source_digest, true);
    const std::string name = cached_name(*key);
    if (std::optional<std::string> object = read_cached_object(object_cache_dir(), *key, name))
      compiled = add_cached_object(name, *object);
  }
  if (!compiled.module) {
    auto ctx = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> m = emit_module(*ctx, k, host_target(), kCachePlaceholder);
    compiled = add_named_module(std::move(m), std::move(ctx), true, key, !key);
  }
  auto lookup = [&](const std::string& name) {
    return reinterpret_cast<ComputeFn>(compiled.module->lookup(compiled.prefix + name));
  };
  ComputeFn compute = lookup("compute");
  ComputeFn prepack = k.prepacked_b ? lookup("prepack") : nullptr;
  return std::make_unique<OrcJitCode>(std::move(compiled.module), compute, prepack);
}

std::unique_ptr<llvm::Module> kernel_module(llvm::LLVMContext& ctx, const lower::LoweredKernel& k,
                                            const CpuTarget& target, bool optimized) {
  auto tm = make_target_machine(target);
  return build_module(ctx, k, target, *tm, "", optimized);
}

std::string llvm_ir_text(const lower::LoweredKernel& k, const CpuTarget& target, bool optimized) {
  llvm::LLVMContext ctx;
  std::string text;
  llvm::raw_string_ostream os(text);
  kernel_module(ctx, k, target, optimized)->print(os, nullptr);
  return text;
}

std::string assembly_text(const lower::LoweredKernel& k, const CpuTarget& target) {
  llvm::LLVMContext ctx;
  auto tm = make_target_machine(target);
  auto m = build_module(ctx, k, target, *tm, "", true);
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    internal_error(__FILE__, __LINE__, "this LLVM target cannot emit assembly");
  pm.run(*m);
  return std::string(buffer.str());
}

}  // namespace dietcode::codegen
