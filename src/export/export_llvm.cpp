// The object code of an exported library: one LLVM module holding
//
//   k<i>_compute, k<i>_prepack   each selected kernel, the module codegen builds for the
//                                JIT (optimized by its own pipeline), renamed
//   dispatch_select              the decision tree (dispatch/dispatch_codegen.h)
//   descriptor                   a dietcode_export_module (runtime/export_abi.h) naming them
//   <name>_run, <name>_prepack…  the C entry points: each passes the descriptor to the
//                                generic runtime (dietcode_export_*)
//
// Everything but the entry points gets internal linkage, so two exported libraries in
// one process cannot clash. The code is emitted for the module's ISA as a PIC object
// with the small code model (the JIT's TargetMachine uses the large one).
#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <cstddef>
#include <set>

#include "codegen/llvm/jit_engine.h"
#include "dispatch/dispatch_codegen.h"
#include "export/export_plan.h"
#include "export/runtime/export_abi.h"
#include "support/error.h"

namespace dietcode::exporter {

namespace {

// The prefix of kernel i's functions in the library ("k3_compute"). (fmt rather than
// "k" + std::to_string(i): GCC 12 warns falsely on the latter, -Wrestrict.)
std::string kernel_prefix(size_t i) {
  return fmt::format("k{}_", i);
}

// Gives every definition a prefix, so that several kernels can share one module.
void prefix_definitions(llvm::Module& m, const std::string& prefix) {
  for (llvm::Function& f : m)
    if (!f.isDeclaration()) f.setName(prefix + f.getName());
  for (llvm::GlobalVariable& g : m.globals())
    if (!g.isDeclaration()) g.setName(prefix + g.getName());
}

void link_into(llvm::Module& dest, std::unique_ptr<llvm::Module> src, const std::string& what) {
  if (llvm::Linker::linkModules(dest, std::move(src)))
    internal_error(__FILE__, __LINE__, "linking the IR of " + what + " into the library failed");
}

// Code that runs before the runtime has checked the CPU: baseline x86-64 only.
void baseline_cpu(llvm::Function& f) {
  f.addFnAttr("target-cpu", "x86-64");
  f.addFnAttr("target-features", "");
  f.addFnAttr(llvm::Attribute::NoUnwind);
}

class EntryPointBuilder {
 public:
  EntryPointBuilder(llvm::Module& m, llvm::GlobalVariable* descriptor)
      : m_(m), ctx_(m.getContext()), b_(ctx_), descriptor_(descriptor) {}

  llvm::Type* i32() { return b_.getInt32Ty(); }
  llvm::Type* i64() { return b_.getInt64Ty(); }
  llvm::Type* ptr() { return b_.getPtrTy(); }
  llvm::Type* void_type() { return b_.getVoidTy(); }

  // A runtime function (hidden in the runtime archive), declared once.
  llvm::FunctionCallee runtime(const std::string& name, llvm::Type* result,
                               std::vector<llvm::Type*> params) {
    llvm::FunctionCallee f =
        m_.getOrInsertFunction(name, llvm::FunctionType::get(result, params, false));
    auto* fn = llvm::cast<llvm::Function>(f.getCallee());
    fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
    fn->setDSOLocal(true);
    return f;
  }

  // Starts `<prefix>function(params)` and leaves the builder in its entry block.
  llvm::Function* begin(const std::string& name, llvm::Type* result,
                        const std::vector<llvm::Type*>& params) {
    auto* f = llvm::Function::Create(llvm::FunctionType::get(result, params, false),
                                     llvm::Function::ExternalLinkage, name, m_);
    baseline_cpu(*f);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    return f;
  }

  // `return runtime(descriptor, args...)` (or `runtime(...); return;` for void).
  void forward(llvm::FunctionCallee callee, std::vector<llvm::Value*> args, bool with_descriptor) {
    if (with_descriptor) args.insert(args.begin(), descriptor_);
    llvm::CallInst* call = b_.CreateCall(callee, args);
    if (call->getType()->isVoidTy()) {
      b_.CreateRetVoid();
    } else {
      b_.CreateRet(call);
    }
  }

  llvm::IRBuilder<>& builder() { return b_; }

 private:
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::GlobalVariable* descriptor_;
};

llvm::Constant* string_constant(llvm::Module& m, const std::string& text, const std::string& name) {
  llvm::Constant* init = llvm::ConstantDataArray::getString(m.getContext(), text, true);
  return new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true,
                                  llvm::GlobalValue::PrivateLinkage, init, name);
}

template <typename T>
llvm::Constant* array_constant(llvm::Module& m, llvm::Type* element, const std::vector<T*>& values,
                               const std::string& name) {
  auto* type = llvm::ArrayType::get(element, values.size());
  std::vector<llvm::Constant*> items(values.begin(), values.end());
  return new llvm::GlobalVariable(m, type, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
                                  llvm::ConstantArray::get(type, items), name);
}

llvm::Constant* i64_array(llvm::Module& m, const std::vector<int64_t>& values,
                          const std::string& name) {
  llvm::Constant* init =
      llvm::ConstantDataArray::get(m.getContext(), llvm::ArrayRef<int64_t>(values));
  return new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true,
                                  llvm::GlobalValue::PrivateLinkage, init, name);
}

// The descriptor's LLVM type, checked field by field against the C struct the runtime
// reads (export_abi.h).
llvm::StructType* descriptor_type(llvm::LLVMContext& ctx, const llvm::DataLayout& layout) {
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  auto* type = llvm::StructType::create(
      ctx, {i64, ptr, i64, i64, i64, i64, i64, i64, ptr, ptr, ptr, i64, ptr, ptr},
      "dietcode_export_module");
  const size_t offsets[] = {
      offsetof(dietcode_export_module, abi_version),
      offsetof(dietcode_export_module, name),
      offsetof(dietcode_export_module, isa),
      offsetof(dietcode_export_module, default_threads),
      offsetof(dietcode_export_module, m_min),
      offsetof(dietcode_export_module, m_max),
      offsetof(dietcode_export_module, num_inputs),
      offsetof(dietcode_export_module, weights_input),
      offsetof(dietcode_export_module, elements_per_m),
      offsetof(dietcode_export_module, elements_fixed),
      offsetof(dietcode_export_module, buffer_names),
      offsetof(dietcode_export_module, num_kernels),
      offsetof(dietcode_export_module, kernels),
      offsetof(dietcode_export_module, select),
  };
  const llvm::StructLayout* sl = layout.getStructLayout(type);
  DC_INTERNAL_CHECK(sl->getSizeInBytes() == sizeof(dietcode_export_module));
  for (unsigned i = 0; i < type->getNumElements(); ++i)
    DC_INTERNAL_CHECK(sl->getElementOffset(i) == offsets[i], "descriptor field {}", i);
  return type;
}

llvm::StructType* kernel_type(llvm::LLVMContext& ctx, const llvm::DataLayout& layout) {
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  auto* type = llvm::StructType::create(ctx, {ptr, ptr, llvm::Type::getInt64Ty(ctx)},
                                        "dietcode_export_kernel");
  const llvm::StructLayout* sl = layout.getStructLayout(type);
  DC_INTERNAL_CHECK(sl->getSizeInBytes() == sizeof(dietcode_export_kernel));
  DC_INTERNAL_CHECK(sl->getElementOffset(1) == offsetof(dietcode_export_kernel, prepack));
  DC_INTERNAL_CHECK(sl->getElementOffset(2) == offsetof(dietcode_export_kernel, packed_elements));
  return type;
}

llvm::GlobalVariable* emit_descriptor(llvm::Module& m, const ExportPlan& plan) {
  llvm::LLVMContext& ctx = m.getContext();
  const llvm::DataLayout& layout = m.getDataLayout();
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  auto int64 = [&](int64_t v) { return llvm::ConstantInt::get(i64, v, /*IsSigned=*/true); };

  std::vector<int64_t> per_m, fixed;
  std::vector<llvm::Constant*> names;
  for (const ExportedBuffer& b : plan.buffers) {
    per_m.push_back(b.per_m);
    fixed.push_back(b.fixed);
    names.push_back(string_constant(m, b.name, "buffer_name." + b.name));
  }

  llvm::StructType* ktype = kernel_type(ctx, layout);
  std::vector<llvm::Constant*> kernels;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const std::string prefix = kernel_prefix(i);
    llvm::Function* compute = m.getFunction(prefix + "compute");
    llvm::Function* prepack = m.getFunction(prefix + "prepack");
    DC_INTERNAL_CHECK(compute && (prepack != nullptr) == plan.kernels[i].lowered.prepacked_b,
                      "kernel {}", i);
    kernels.push_back(llvm::ConstantStruct::get(
        ktype, {compute,
                prepack ? static_cast<llvm::Constant*>(prepack)
                        : llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx, 0)),
                int64(plan.kernels[i].packed_elements)}));
  }
  auto* kernels_type = llvm::ArrayType::get(ktype, kernels.size());
  auto* kernel_table =
      new llvm::GlobalVariable(m, kernels_type, true, llvm::GlobalValue::PrivateLinkage,
                               llvm::ConstantArray::get(kernels_type, kernels), "kernels");

  llvm::Function* select = m.getFunction("dispatch_select");
  DC_INTERNAL_CHECK(select != nullptr);
  const int64_t isa =
      plan.spec.isa == schedule::Isa::Avx512 ? DIETCODE_EXPORT_ISA_AVX512 : DIETCODE_EXPORT_ISA_AVX2;
  llvm::StructType* dtype = descriptor_type(ctx, layout);
  llvm::Constant* init = llvm::ConstantStruct::get(
      dtype,
      {int64(DIETCODE_EXPORT_ABI_VERSION), string_constant(m, plan.name, "module_name"), int64(isa),
       int64(plan.spec.threads), int64(plan.spec.op.m_min), int64(plan.spec.op.m_max),
       int64(plan.num_inputs()), int64(plan.weights_input), i64_array(m, per_m, "elements_per_m"),
       i64_array(m, fixed, "elements_fixed"), array_constant(m, ptr, names, "buffer_names"),
       int64(int64_t(plan.kernels.size())), kernel_table, select});
  return new llvm::GlobalVariable(m, dtype, true, llvm::GlobalValue::InternalLinkage, init,
                                  "descriptor");
}

void emit_entry_points(llvm::Module& m, const ExportPlan& plan, llvm::GlobalVariable* descriptor) {
  EntryPointBuilder e(m, descriptor);
  llvm::IRBuilder<>& b = e.builder();
  const std::string& p = plan.name;
  const int n = plan.num_inputs();

  if (plan.weights_input >= 0) {
    auto prepack =
        e.runtime("dietcode_export_prepack", e.i32(), {e.ptr(), e.ptr(), e.i64(), e.ptr()});
    llvm::Function* f = e.begin(p + "_prepack", e.i32(), {e.ptr(), e.i64(), e.ptr()});
    e.forward(prepack, {f->getArg(0), f->getArg(1), f->getArg(2)}, true);
    auto free_weights =
        e.runtime("dietcode_export_free_weights", e.void_type(), {e.ptr(), e.ptr()});
    f = e.begin(p + "_free_weights", e.void_type(), {e.ptr()});
    e.forward(free_weights, {f->getArg(0)}, true);
  }

  // <name>_run(M, [data, elements | weights handle] per input, output, output elements):
  // the inputs are gathered into arrays for the generic runtime.
  {
    auto run = e.runtime("dietcode_export_run", e.i32(),
                         {e.ptr(), e.i64(), e.ptr(), e.ptr(), e.ptr(), e.ptr(), e.i64()});
    std::vector<llvm::Type*> params = {e.i64()};
    for (int i = 0; i < n; ++i) {
      params.push_back(e.ptr());
      if (i != plan.weights_input) params.push_back(e.i64());
    }
    params.push_back(e.ptr());
    params.push_back(e.i64());
    llvm::Function* f = e.begin(p + "_run", e.i32(), params);
    llvm::Type* inputs_type = llvm::ArrayType::get(e.ptr(), n);
    llvm::Type* elements_type = llvm::ArrayType::get(e.i64(), n);
    llvm::Value* inputs = b.CreateAlloca(inputs_type, nullptr, "inputs");
    llvm::Value* elements = b.CreateAlloca(elements_type, nullptr, "elements");
    llvm::Value* weights = llvm::ConstantPointerNull::get(b.getPtrTy());
    unsigned arg = 1;
    for (int i = 0; i < n; ++i) {
      llvm::Value* data = f->getArg(arg++);
      llvm::Value* count = b.getInt64(0);
      if (i == plan.weights_input) {  // the handle goes separately; its slot stays empty
        weights = data;
        data = llvm::ConstantPointerNull::get(b.getPtrTy());
      } else {
        count = f->getArg(arg++);
      }
      b.CreateStore(data, b.CreateConstInBoundsGEP2_64(inputs_type, inputs, 0, i));
      b.CreateStore(count, b.CreateConstInBoundsGEP2_64(elements_type, elements, 0, i));
    }
    e.forward(run, {f->getArg(0), inputs, elements, weights, f->getArg(arg), f->getArg(arg + 1)},
              true);
  }

  auto set_threads = e.runtime("dietcode_export_set_threads", e.i32(), {e.ptr(), e.i32()});
  llvm::Function* f = e.begin(p + "_set_threads", e.i32(), {e.i32()});
  e.forward(set_threads, {f->getArg(0)}, true);

  auto kernel_for = e.runtime("dietcode_export_kernel_for", e.i32(), {e.ptr(), e.i64()});
  f = e.begin(p + "_kernel_for", e.i32(), {e.i64()});
  e.forward(kernel_for, {f->getArg(0)}, true);

  auto last_error = e.runtime("dietcode_export_last_error", e.ptr(), {});
  e.begin(p + "_last_error", e.ptr(), {});
  e.forward(last_error, {}, false);
}

// A TargetMachine for object files: like the JIT's (codegen::make_target_machine, which
// also sets LLVM's process options), but not in JIT mode, so the small code model.
std::unique_ptr<llvm::TargetMachine> object_target_machine(const codegen::CpuTarget& target) {
  std::unique_ptr<llvm::TargetMachine> jit = codegen::make_target_machine(target);
  return std::unique_ptr<llvm::TargetMachine>(jit->getTarget().createTargetMachine(
      jit->getTargetTriple().str(), target.cpu, target.features, jit->Options, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive, /*JIT=*/false));
}

}  // namespace

std::vector<std::string> api_functions(const ExportPlan& plan) {
  std::vector<std::string> out;
  if (plan.weights_input >= 0) out = {"prepack", "free_weights"};
  for (const char* f : {"run", "set_threads", "kernel_for", "last_error"}) out.push_back(f);
  return out;
}

void write_object(const ExportPlan& plan, const std::string& path) {
  std::unique_ptr<llvm::TargetMachine> tm = object_target_machine(plan.target);
  llvm::LLVMContext ctx;
  auto m = std::make_unique<llvm::Module>(plan.name, ctx);
  codegen::set_target(*m, *tm);

  // The kernels and the dispatcher, exactly as the JIT compiles them, built in this
  // module's context.
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    std::unique_ptr<llvm::Module> k =
        codegen::kernel_module(ctx, plan.kernels[i].lowered, plan.target, /*optimized=*/true);
    prefix_definitions(*k, kernel_prefix(i));
    k->setDataLayout(m->getDataLayout());
    k->setTargetTriple(m->getTargetTriple());
    link_into(*m, std::move(k), "kernel " + std::to_string(i));
  }
  std::unique_ptr<llvm::Module> d =
      dispatch::dispatcher_module(ctx, plan.spec.dispatch, plan.target);
  prefix_definitions(*d, "dispatch_");
  for (llvm::Function& f : *d)
    if (!f.isDeclaration()) baseline_cpu(f);
  d->setDataLayout(m->getDataLayout());
  d->setTargetTriple(m->getTargetTriple());
  link_into(*m, std::move(d), "the dispatcher");

  emit_entry_points(*m, plan, emit_descriptor(*m, plan));

  // Only the entry points leave the object; the runtime it calls is hidden in the library.
  std::set<std::string> exported;
  for (const std::string& f : api_functions(plan)) exported.insert(plan.name + "_" + f);
  for (llvm::Function& f : *m) {
    if (f.isDeclaration()) {
      if (f.getName().starts_with("dietcode_")) {
        f.setVisibility(llvm::GlobalValue::HiddenVisibility);
        f.setDSOLocal(true);
      }
    } else if (!exported.count(f.getName().str())) {
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
    }
  }
  for (llvm::GlobalVariable& g : m->globals())
    if (!g.isDeclaration() && !g.hasLocalLinkage())
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (const std::string& name : exported)
    DC_INTERNAL_CHECK(m->getFunction(name) != nullptr, "entry point {}", name);

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*m, &os))
    internal_error(__FILE__, __LINE__, "the exported library's LLVM IR is invalid: " + problems);

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) user_error("{}: cannot write the object file: {}", path, ec.message());
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    internal_error(__FILE__, __LINE__, "this LLVM target cannot emit object files");
  pm.run(*m);
  out.close();
  if (out.has_error()) {
    std::string message = out.error().message();
    out.clear_error();
    user_error("{}: cannot write the object file: {}", path, message);
  }
}

}  // namespace dietcode::exporter
