#include "codegen/llvm/codegen_llvm.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

#include "codegen/llvm/activation.h"
#include "ir/printer.h"
#include "lower/insert_packing.h"
#include "schedule/micro_kernel.h"
#include "support/error.h"

namespace dietcode::codegen {

using namespace ir;

FunctionEmitter::FunctionEmitter(llvm::Module& module, const CpuTarget& target)
    : module_(module), ctx_(module.getContext()), target_(target), b_(module.getContext()) {}

llvm::Function* FunctionEmitter::new_function(const std::string& name, llvm::FunctionType* type) {
  llvm::Function* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
  f->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) f->addFnAttr("target-features", target_.features);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr("frame-pointer", "none");
  return f;
}

void FunctionEmitter::emit_function(const lower::LoweredFunc& f, const std::string& name) {
  llvm::Type* ptr = b_.getPtrTy();
  function_ = new_function(name, llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr}, false));
  function_name_ = name;
  work_ = f.work;
  llvm::Value* shape = function_->getArg(0);
  llvm::Value* bufs = function_->getArg(1);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", function_));
  vars_.clear();
  buffers_.clear();
  for (size_t i = 0; i < f.shape_vars.size(); ++i)
    vars_[f.shape_vars[i].get()] =
        b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), shape, i),
                      f.shape_vars[i].name());
  for (size_t i = 0; i < f.buffers.size(); ++i)
    buffers_[f.buffers[i].get()] =
        b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, bufs, i), f.buffers[i].name());
  emit(f.body);
  b_.CreateRetVoid();
}

llvm::Value* FunctionEmitter::buffer(const Buffer& buf) {
  auto it = buffers_.find(buf.get());
  DC_INTERNAL_CHECK(it != buffers_.end(), "buffer {} is not in scope", buf.name());
  return it->second;
}

llvm::Value* FunctionEmitter::element_ptr(const Buffer& buf, llvm::Value* flat_index) {
  return b_.CreateInBoundsGEP(b_.getFloatTy(), buffer(buf), flat_index);
}

llvm::Value* FunctionEmitter::entry_alloca(llvm::Type* type, uint64_t count, uint64_t align) {
  llvm::IRBuilder<> entry(&function_->getEntryBlock(), function_->getEntryBlock().begin());
  llvm::AllocaInst* a = entry.CreateAlloca(type, entry.getInt64(count));
  a->setAlignment(llvm::Align(align));
  return a;
}

void FunctionEmitter::emit_loop(llvm::Value* begin, llvm::Value* end,
                                const std::function<void(llvm::Value*)>& body, const char* name) {
  emit_loop(
      begin, end, {},
      [&](llvm::Value* i, const Carried&) {
        body(i);
        return Carried{};
      },
      name);
}

FunctionEmitter::Carried FunctionEmitter::emit_loop(
    llvm::Value* begin, llvm::Value* end, const Carried& init,
    const std::function<Carried(llvm::Value*, const Carried&)>& body, const char* name) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* header =
      llvm::BasicBlock::Create(ctx_, std::string(name) + ".header", function_);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, std::string(name) + ".body", function_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".exit", function_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  i->addIncoming(begin, pre);
  Carried values;
  for (llvm::Value* v : init) {
    llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, pre);
    values.push_back(phi);
  }
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), loop, exit);
  b_.SetInsertPoint(loop);
  Carried next = body(i, values);
  DC_INTERNAL_CHECK(next.size() == values.size(), "loop {}: carried value count", name);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  i->addIncoming(b_.CreateAdd(i, b_.getInt64(1), "", /*HasNUW=*/false, /*HasNSW=*/true), latch);
  for (size_t k = 0; k < values.size(); ++k)
    llvm::cast<llvm::PHINode>(values[k])->addIncoming(next[k], latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  return values;
}

void FunctionEmitter::emit_for(const ForNode& f) {
  llvm::Value* begin = emit(f.min);
  llvm::Value* end = b_.CreateAdd(begin, emit(f.extent));
  emit_loop(
      begin, end,
      [&](llvm::Value* i) {
        vars_[f.var.get()] = i;
        emit(f.body);
        vars_.erase(f.var.get());
      },
      f.var.name().c_str());
}

// Outlines the loop into `void body(int64_t begin, int64_t end, void* closure)`, which runs
// the iterations [begin, end) (all of them in one call when the thread pool's caller runs
// alone, so that what the body sets up is set up once); the closure holds every variable
// and buffer in scope (a few dozen words at most) as int64 slots.
void FunctionEmitter::emit_parallel_for(const ForNode& f) {
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* ptr = b_.getPtrTy();
  std::vector<const VarNode*> var_keys;
  std::vector<const BufferNode*> buf_keys;
  for (auto& [k, v] : vars_) var_keys.push_back(k);
  for (auto& [k, v] : buffers_) buf_keys.push_back(k);
  // In name order, not the maps' (address) order: the same kernel then compiles to the
  // same code in every process, which the object cache keys on.
  std::sort(var_keys.begin(), var_keys.end(),
            [](const VarNode* a, const VarNode* b) { return a->name < b->name; });
  std::sort(buf_keys.begin(), buf_keys.end(),
            [](const BufferNode* a, const BufferNode* b) { return a->name < b->name; });
  uint64_t slots = var_keys.size() + buf_keys.size() + 1;
  llvm::Value* closure = entry_alloca(i64, slots, 8);
  auto slot = [&](llvm::IRBuilder<>& bb, llvm::Value* base, uint64_t i) {
    return bb.CreateConstInBoundsGEP1_64(i64, base, i);
  };
  uint64_t n = 0;
  for (const VarNode* k : var_keys) b_.CreateStore(vars_[k], slot(b_, closure, n++));
  for (const BufferNode* k : buf_keys)
    b_.CreateStore(b_.CreatePtrToInt(buffers_[k], i64), slot(b_, closure, n++));
  llvm::Value* min = emit(f.min);
  b_.CreateStore(min, slot(b_, closure, n));
  llvm::Value* extent = emit(f.extent);
  llvm::Value* work = work_.defined() ? emit(work_) : b_.getInt64(-1);

  // Emit the outlined body with its own scope, then come back.
  auto saved_vars = vars_;
  auto saved_bufs = buffers_;
  llvm::Function* saved_fn = function_;
  llvm::BasicBlock* saved_block = b_.GetInsertBlock();
  llvm::Function* body =
      new_function(fmt::format("{}.par{}", function_name_, outlined_count_++),
                   llvm::FunctionType::get(b_.getVoidTy(), {i64, i64, ptr}, false));
  body->setLinkage(llvm::Function::InternalLinkage);
  function_ = body;
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
  llvm::Value* in = body->getArg(2);
  n = 0;
  for (const VarNode* k : var_keys) vars_[k] = b_.CreateLoad(i64, slot(b_, in, n++), k->name);
  for (const BufferNode* k : buf_keys)
    buffers_[k] = b_.CreateIntToPtr(b_.CreateLoad(i64, slot(b_, in, n++)), ptr, k->name);
  llvm::Value* first = b_.CreateLoad(i64, slot(b_, in, n));
  emit_loop(
      b_.CreateAdd(first, body->getArg(0)), b_.CreateAdd(first, body->getArg(1)),
      [&](llvm::Value* i) {
        vars_[f.var.get()] = i;
        emit(f.body);
        vars_.erase(f.var.get());
      },
      f.var.name().c_str());
  b_.CreateRetVoid();
  function_ = saved_fn;
  vars_ = std::move(saved_vars);
  buffers_ = std::move(saved_bufs);
  b_.SetInsertPoint(saved_block);

  // One task (a single head, one block): call the body here, without a round trip
  // through the thread pool.
  llvm::FunctionCallee pfor = module_.getOrInsertFunction(
      "dietcode_parallel_for",
      llvm::FunctionType::get(b_.getVoidTy(), {i64, ptr, ptr, i64}, false));
  llvm::BasicBlock* one = llvm::BasicBlock::Create(ctx_, "par.one", function_);
  llvm::BasicBlock* pool = llvm::BasicBlock::Create(ctx_, "par.pool", function_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "par.done", function_);
  b_.CreateCondBr(b_.CreateICmpEQ(extent, b_.getInt64(1)), one, pool);
  b_.SetInsertPoint(one);
  b_.CreateCall(llvm::FunctionCallee(body->getFunctionType(), body),
                {b_.getInt64(0), b_.getInt64(1), closure});
  b_.CreateBr(done);
  b_.SetInsertPoint(pool);
  b_.CreateCall(pfor, {extent, body, closure, work});
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void FunctionEmitter::emit(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::For: {
      const auto* f = s.as<ForNode>();
      if (f->for_kind == ForKind::Parallel)
        emit_parallel_for(*f);
      else
        emit_for(*f);
      return;
    }
    case StmtKind::Block:
      for (const Stmt& c : s.as<BlockNode>()->stmts) emit(c);
      return;
    case StmtKind::LetStmt: {
      const auto* l = s.as<LetStmtNode>();
      llvm::Value* v = emit(l->value);
      if (llvm::isa<llvm::Instruction>(v)) v->setName(l->var.name());
      vars_[l->var.get()] = v;
      emit(l->body);
      vars_.erase(l->var.get());
      return;
    }
    case StmtKind::IfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", function_);
      llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "else", function_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "endif", function_);
      b_.CreateCondBr(emit(n->condition), then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      emit(n->then_case);
      b_.CreateBr(done);
      b_.SetInsertPoint(else_bb);
      if (n->else_case.defined()) emit(n->else_case);
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return;
    }
    case StmtKind::Store: {
      const auto* n = s.as<StoreNode>();
      llvm::Value* value = emit(n->value);
      b_.CreateStore(value, element_ptr(n->buffer, emit(flatten_index(n->buffer, n->indices))));
      return;
    }
    case StmtKind::Allocate: {
      const auto* n = s.as<AllocateNode>();
      llvm::Type* i64 = b_.getInt64Ty();
      llvm::FunctionCallee alloc = module_.getOrInsertFunction(
          "dietcode_alloc", llvm::FunctionType::get(b_.getPtrTy(), {i64}, false));
      llvm::FunctionCallee release = module_.getOrInsertFunction(
          "dietcode_free", llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false));
      llvm::Value* bytes = b_.CreateMul(emit(n->buffer.shape()[0]), b_.getInt64(sizeof(float)));
      llvm::Value* p = b_.CreateCall(alloc, {bytes}, n->buffer.name());
      buffers_[n->buffer.get()] = p;
      emit(n->body);
      b_.CreateCall(release, {p});
      buffers_.erase(n->buffer.get());
      return;
    }
    case StmtKind::MicroKernel:
      emit_micro_kernel(*this, *s.as<MicroKernelNode>());
      return;
    case StmtKind::RowKernel:
      emit_row_kernel(*this, *s.as<RowKernelNode>());
      return;
    case StmtKind::AttentionKernel:
      emit_attention_kernel(*this, *s.as<AttentionKernelNode>());
      return;
    case StmtKind::PackStage:
      if (lower::packs_by_transposing(*s.as<PackStageNode>()))
        return emit_transposing_pack(*this, *s.as<PackStageNode>());
      internal_error(__FILE__, __LINE__,
                     "pack stage reached code generation (insert_packing not run)");
  }
}

llvm::Value* FunctionEmitter::emit(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm:
      return b_.getInt64(e.as<IntImmNode>()->value);
    case ExprKind::FloatImm:
      return llvm::ConstantFP::get(b_.getFloatTy(), e.as<FloatImmNode>()->value);
    case ExprKind::Var: {
      auto it = vars_.find(e.as<VarNode>());
      DC_INTERNAL_CHECK(it != vars_.end(), "variable {} is not in scope", e.as<VarNode>()->name);
      return it->second;
    }
    case ExprKind::Select: {
      const auto* s = e.as<SelectNode>();
      return b_.CreateSelect(emit(s->condition), emit(s->true_value), emit(s->false_value));
    }
    case ExprKind::Load: {
      const auto* l = e.as<LoadNode>();
      return b_.CreateLoad(b_.getFloatTy(),
                           element_ptr(l->buffer, emit(flatten_index(l->buffer, l->indices))));
    }
    case ExprKind::Call: {
      const auto* c = e.as<CallNode>();
      llvm::Value* x = emit(c->args[0]);
      if (c->op == CallOp::ToFloat) return b_.CreateSIToFP(x, b_.getFloatTy());
      return emit_float_call(b_, c->op, x);
    }
    case ExprKind::Reduce:
      internal_error(__FILE__, __LINE__, "a reduction reached code generation: " + to_string(e));
    default:
      break;
  }
  const BinaryNode* bin = as_binary(e);
  llvm::Value* x = emit(bin->a);
  llvm::Value* y = emit(bin->b);
  bool is_float = bin->a.type() == Type::Float;
  switch (e.kind()) {
    case ExprKind::Add:
      return is_float ? b_.CreateFAdd(x, y) : b_.CreateAdd(x, y, "", false, true);
    case ExprKind::Sub:
      return is_float ? b_.CreateFSub(x, y) : b_.CreateSub(x, y, "", false, true);
    case ExprKind::Mul:
      return is_float ? b_.CreateFMul(x, y) : b_.CreateMul(x, y, "", false, true);
    case ExprKind::Div:
    case ExprKind::Mod: {
      if (is_float) {
        DC_INTERNAL_CHECK(e.kind() == ExprKind::Div, "float remainder is not in the IR");
        return b_.CreateFDiv(x, y);
      }
      // Floor semantics: truncating division, corrected when the signs differ.
      llvm::Value* q = b_.CreateSDiv(x, y);
      llvm::Value* r = b_.CreateSRem(x, y);
      llvm::Value* zero = b_.getInt64(0);
      llvm::Value* fix =
          b_.CreateAnd(b_.CreateICmpNE(r, zero),
                       b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(y, zero)));
      if (e.kind() == ExprKind::Div) return b_.CreateSub(q, b_.CreateZExt(fix, b_.getInt64Ty()));
      return b_.CreateSelect(fix, b_.CreateAdd(r, y), r);
    }
    case ExprKind::Min:
      return is_float ? b_.CreateMinNum(x, y) : b_.CreateSelect(b_.CreateICmpSLT(x, y), x, y);
    case ExprKind::Max:
      return is_float ? b_.CreateMaxNum(x, y) : b_.CreateSelect(b_.CreateICmpSGT(x, y), x, y);
    case ExprKind::LT:
      return is_float ? b_.CreateFCmpOLT(x, y) : b_.CreateICmpSLT(x, y);
    case ExprKind::LE:
      return is_float ? b_.CreateFCmpOLE(x, y) : b_.CreateICmpSLE(x, y);
    case ExprKind::EQ:
      return is_float ? b_.CreateFCmpOEQ(x, y) : b_.CreateICmpEQ(x, y);
    case ExprKind::And:
      return b_.CreateAnd(x, y);
    default:
      break;
  }
  internal_error(__FILE__, __LINE__, std::string("cannot emit ") + to_string(e.kind()));
}

std::unique_ptr<llvm::Module> emit_module(llvm::LLVMContext& ctx, const lower::LoweredKernel& k,
                                          const CpuTarget& target, const std::string& prefix) {
  auto module = std::make_unique<llvm::Module>(prefix + "module", ctx);
  {
    FunctionEmitter fe(*module, target);
    fe.emit_function(k.compute, prefix + "compute");
  }
  if (k.prepacked_b) {
    FunctionEmitter fe(*module, target);
    fe.emit_function(k.prepack, prefix + "prepack");
  }
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*module, &os))
    internal_error(__FILE__, __LINE__, "invalid LLVM IR: " + errors);
  return module;
}

}  // namespace dietcode::codegen
