//===- ParallelizeLoops.cpp - Outer loops on the runtime's thread pool ----===//
//
// `attn-parallelize-loops`: an outermost scf.for of an entry point whose
// iterations are independent runs on the thread pool of the calling context
// through the runtime's `attn_parallel_for_sized` (attn_parallel_for on the
// context's pool when the loop is large enough)
// (runtime/include/attn/runtime.h). A perfect nest of two such loops (batch
// x heads of attention, batch x positions of the vectorised element-wise
// ops) is flattened into one range of n = n0 * n1 iterations first.
//
// Independence is proved, not assumed: every memory effect in the body must
// be on a buffer allocated inside it, or on a buffer from outside read only,
// or written (and then also read) only through a memref.subview whose offset
// in some unit-size dim is the loop's induction variable (for a flattened
// nest: one such dim per induction variable), i.e. a slice no other
// iteration touches. Calls are allowed to private functions of the module
// (the matrix-product kernels, bufferisation's dealloc helper), with their
// buffer arguments counted as written.
//
// The body is outlined into an internal function `void task(void *arg,
// int64_t begin, int64_t end)` running iterations [begin, end); the values
// it uses from above (buffer descriptors, indices, scalars) are stored in a
// stack struct whose address is `arg`; constants are rematerialised. The
// call is `attn_parallel_for_sized(n, work, min_work, task, arg)`: the
// runtime uses the pool from 2 iterations when the buffers the loop writes
// hold `min_work` elements, 2^16 for a loop of vector rows, 2^12 for
// iterations with loops of dynamic trip count or calls of their own (as
// attention's heads), and calls the task on [0, n) itself otherwise.
//
// A task whose body equals an earlier task's (the same loop of another
// layer or entry point, on other buffers) is not kept: the call uses the
// earlier one, so each distinct loop is compiled once.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace attn {
namespace {

/// The buffer a view is of, and the subviews on the way.
Value rootOf(Value v, SmallVectorImpl<memref::SubViewOp> &subviews) {
  for (int step = 0; step < 32; ++step) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return v;
    // A memref.view of the arena (attn-plan-arena) is a buffer of its own:
    // views live at the same time never overlap.
    if (isa<memref::ViewOp>(def))
      return v;
    if (auto sv = dyn_cast<memref::SubViewOp>(def)) {
      subviews.push_back(sv);
      v = sv.getSource();
    } else if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
    } else if (isa<memref::CastOp, memref::CollapseShapeOp,
                   memref::ExpandShapeOp>(def)) {
      v = def->getOperand(0);
    } else {
      return v;
    }
  }
  return v;
}

/// Whether every induction variable of `ivs` is the offset of a unit-size
/// dim of one of `subviews`: the slice is private to one iteration.
bool slicedByIvs(ArrayRef<memref::SubViewOp> subviews, ArrayRef<Value> ivs) {
  for (Value iv : ivs) {
    bool found = false;
    for (memref::SubViewOp sv : subviews) {
      SmallVector<OpFoldResult> offsets = sv.getMixedOffsets();
      SmallVector<OpFoldResult> sizes = sv.getMixedSizes();
      for (auto [offset, size] : llvm::zip(offsets, sizes)) {
        std::optional<int64_t> s = getConstantIntValue(size);
        if (dyn_cast<Value>(offset) == iv && s && *s == 1)
          found = true;
      }
    }
    if (!found)
      return false;
  }
  return true;
}

/// Whether the iterations of `nest` (outermost first, perfectly nested)
/// touch disjoint memory, as the file comment describes.
bool independent(ArrayRef<scf::ForOp> nest, ModuleOp module,
                 SetVector<Value> *writtenRoots = nullptr) {
  scf::ForOp outer = nest.front();
  SmallVector<Value> ivs;
  for (scf::ForOp loop : nest)
    ivs.push_back(loop.getInductionVar());
  auto isLocal = [&](Value root) {
    Operation *def = root.getDefiningOp();
    Region *region = def ? def->getParentRegion()
                         : cast<BlockArgument>(root).getOwner()->getParent();
    return outer.getRegion().isAncestor(region);
  };
  struct Access {
    Value root;
    SmallVector<memref::SubViewOp> subviews;
  };
  SmallVector<Access> reads;
  // In program order, so that the work estimate the call site sums over
  // these buffers is emitted the same way at every compilation.
  SetVector<Value> written;
  bool ok = true;
  auto access = [&](Value buffer, bool write) {
    if (!isa<BaseMemRefType>(buffer.getType()))
      return;
    Access a;
    a.root = rootOf(buffer, a.subviews);
    if (isLocal(a.root))
      return;
    if (write) {
      if (!slicedByIvs(a.subviews, ivs))
        ok = false;
      written.insert(a.root);
    } else {
      reads.push_back(std::move(a));
    }
  };
  outer.getBody()->walk([&](Operation *op) {
    if (!ok)
      return WalkResult::interrupt();
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal() || callee.isPublic()) {
        ok = false;
        return WalkResult::interrupt();
      }
      for (Value operand : call.getOperands())
        access(operand, /*write=*/true);
      return WalkResult::advance();
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects && op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance(); // the nested ops are walked
    if (!effects) {
      if (!isPure(op) && op->getNumRegions() == 0 &&
          !op->hasTrait<OpTrait::IsTerminator>())
        ok = false;
      return WalkResult::advance();
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (auto &instance : instances) {
      Value value = instance.getValue();
      bool isAlloc = isa<MemoryEffects::Allocate>(instance.getEffect());
      if (!value) {
        // An effect on no particular value: only allocation (of the op's
        // own result) is harmless.
        if (!isAlloc)
          ok = false;
        continue;
      }
      if (isAlloc)
        continue;
      access(value, !isa<MemoryEffects::Read>(instance.getEffect()));
    }
    return WalkResult::advance();
  });
  if (!ok)
    return false;
  for (Access &a : reads)
    if (written.contains(a.root) && !slicedByIvs(a.subviews, ivs))
      return false;
  if (writtenRoots)
    writtenRoots->insert(written.begin(), written.end());
  return true;
}

/// How a value from above travels through the task's argument struct.
Type fieldType(Type type) {
  MLIRContext *context = type.getContext();
  if (auto memref = dyn_cast<MemRefType>(type)) {
    Type ptr = LLVM::LLVMPointerType::get(context);
    Type i64 = IntegerType::get(context, 64);
    if (memref.getRank() == 0)
      return LLVM::LLVMStructType::getLiteral(context, {ptr, ptr, i64});
    Type dims = LLVM::LLVMArrayType::get(i64, memref.getRank());
    return LLVM::LLVMStructType::getLiteral(context,
                                            {ptr, ptr, i64, dims, dims});
  }
  if (type.isIndex())
    return IntegerType::get(context, 64);
  if (type.isIntOrFloat())
    return type;
  return nullptr;
}

struct ParallelizeLoopsPass
    : PassWrapper<ParallelizeLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ParallelizeLoopsPass)

  StringRef getArgument() const override { return "attn-parallelize-loops"; }
  StringRef getDescription() const override {
    return "Runs independent outermost scf.for loops on the runtime's thread "
           "pool (attn_parallel_for)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect,
                    LLVM::LLVMDialect, memref::MemRefDialect,
                    scf::SCFDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A pass instance may run on several modules (attnc-opt
    // --split-input-file): tasks of an earlier one are gone.
    tasksByHash.clear();
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.isPublic())
        funcs.push_back(func);
    for (func::FuncOp func : funcs) {
      SmallVector<scf::ForOp> loops;
      for (Block &block : func.getBody())
        for (auto loop : block.getOps<scf::ForOp>())
          loops.push_back(loop);
      unsigned counter = 0;
      for (scf::ForOp loop : loops) {
        if (loop.getNumResults() != 0)
          continue;
        SmallVector<scf::ForOp> nest = {loop};
        // A perfect nest of two loops flattens into one range.
        Block *body = loop.getBody();
        if (body->getOperations().size() == 2)
          if (auto inner = dyn_cast<scf::ForOp>(body->front()))
            if (inner.getNumResults() == 0 &&
                !loop.getRegion().isAncestor(
                    inner.getUpperBound().getParentRegion()) &&
                !loop.getRegion().isAncestor(
                    inner.getLowerBound().getParentRegion()) &&
                !loop.getRegion().isAncestor(inner.getStep().getParentRegion()))
              nest.push_back(inner);
        if (nest.size() == 2 && !independent(nest, module))
          nest.pop_back(); // the outer loop alone, or serial
        SetVector<Value> written;
        bool parallel = independent(nest, module, &written);
        outline(module, func, nest, written, parallel, counter++);
      }
      // What is left of an entry point is glue (allocations, descriptors,
      // calls): LLVM need not optimise it, which saves a third of a large
      // model's compile time.
      bool glue = true;
      func.walk([&](Operation *op) {
        if (isa<LoopLikeOpInterface>(op))
          glue = false;
      });
      if (glue && !func->hasAttr("passthrough"))
        func->setAttr("passthrough",
                      ArrayAttr::get(module.getContext(),
                                     {StringAttr::get(module.getContext(),
                                                      "noinline"),
                                      StringAttr::get(module.getContext(),
                                                      "optnone")}));
    }
  }

  /// Tasks made so far in this module, by a hash of their bodies.
  llvm::DenseMap<size_t, SmallVector<func::FuncOp, 1>> tasksByHash;

  /// An earlier task with the same body as `task` (which is then erased),
  /// else `task`. The layers of a model repeat the same loops on other
  /// buffers, and the buffers travel in the argument struct: gpt2_small's
  /// entry points outline 2187 loops with 437 different bodies, so most
  /// tasks are compiled once instead of once per layer and entry point.
  func::FuncOp deduplicate(func::FuncOp task) {
    llvm::hash_code hash = hash_value(Type(task.getFunctionType()));
    task.getBody().walk([&](Operation *op) {
      hash = llvm::hash_combine(
          hash, OperationEquivalence::computeHash(
                    op, OperationEquivalence::ignoreHashValue,
                    OperationEquivalence::ignoreHashValue,
                    OperationEquivalence::IgnoreLocations));
    });
    SmallVector<func::FuncOp, 1> &same = tasksByHash[hash];
    for (func::FuncOp earlier : same)
      if (earlier.getFunctionType() == task.getFunctionType() &&
          OperationEquivalence::isRegionEquivalentTo(
              &earlier.getBody(), &task.getBody(),
              OperationEquivalence::IgnoreLocations)) {
        task.erase();
        return earlier;
      }
    same.push_back(task);
    return task;
  }

  /// `attn_parallel_for_sized(n, work, min_work, fn, arg)`, declared once.
  func::FuncOp parallelFor(ModuleOp module, FunctionType taskType) {
    StringRef name = "attn_parallel_for_sized";
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    Type ptr = LLVM::LLVMPointerType::get(module.getContext());
    Type i64 = mb.getI64Type();
    auto func = func::FuncOp::create(
        mb, module.getLoc(), name,
        mb.getFunctionType({i64, i64, i64, taskType, ptr}, {}));
    func.setPrivate();
    return func;
  }

  /// Outlines `nest` into a task; calls it through the pool when
  /// `parallel` (and the loop is large enough), directly otherwise.
  void outline(ModuleOp module, func::FuncOp parent,
               SmallVector<scf::ForOp> nest, const SetVector<Value> &written,
               bool parallel, unsigned index) {
    MLIRContext *context = module.getContext();
    scf::ForOp outer = nest.front();
    Location loc = outer.getLoc();

    // Values from above: the loops' bounds and what the body uses.
    SetVector<Value> above;
    for (scf::ForOp loop : nest)
      for (Value v : {loop.getLowerBound(), loop.getUpperBound(),
                      loop.getStep()})
        if (!outer.getRegion().isAncestor(v.getParentRegion()))
          above.insert(v);
    getUsedValuesDefinedAbove(outer.getRegion(), above);
    SmallVector<Value> captured, constants;
    SmallVector<Type> fields;
    for (Value v : above) {
      Operation *def = v.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>() &&
          def->getNumOperands() == 0) {
        constants.push_back(v);
        continue;
      }
      Type field = fieldType(v.getType());
      if (!field)
        return; // something the struct cannot carry: leave the loop serial
      captured.push_back(v);
      fields.push_back(field);
    }
    Type ptr = LLVM::LLVMPointerType::get(context);
    Type i64 = IntegerType::get(context, 64);
    auto structType = LLVM::LLVMStructType::getLiteral(
        context, fields.empty() ? SmallVector<Type>{i64} : fields);

    // The task: void task(void *arg, int64_t begin, int64_t end).
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    std::string name =
        (parent.getName() + "_par" + llvm::Twine(index)).str();
    auto task = func::FuncOp::create(mb, loc, name,
                                     mb.getFunctionType({ptr, i64, i64}, {}));
    task.setPrivate();
    task->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
    Block *entry = task.addEntryBlock();
    ImplicitLocOpBuilder b(loc, context);
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (Value c : constants)
      map.map(c, b.clone(*c.getDefiningOp())->getResult(0));
    for (auto [i, v] : llvm::enumerate(captured)) {
      Value field = LLVM::GEPOp::create(
          b, ptr, structType, entry->getArgument(0),
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      Value loaded = LLVM::LoadOp::create(b, fields[i], field);
      Value value;
      if (isa<MemRefType>(v.getType()))
        value = UnrealizedConversionCastOp::create(b, v.getType(), loaded)
                    .getResult(0);
      else if (v.getType().isIndex())
        value = arith::IndexCastOp::create(b, b.getIndexType(), loaded);
      else
        value = loaded;
      map.map(v, value);
    }
    auto tripCount = [&](ImplicitLocOpBuilder &ib, scf::ForOp loop,
                         IRMapping &m) -> Value {
      Value lb = m.lookupOrDefault(loop.getLowerBound());
      Value ub = m.lookupOrDefault(loop.getUpperBound());
      Value step = m.lookupOrDefault(loop.getStep());
      Value span = arith::SubIOp::create(ib, ub, lb);
      Value up = arith::AddIOp::create(
          ib, span,
          arith::SubIOp::create(ib, step,
                                arith::ConstantIndexOp::create(ib, 1)));
      return arith::DivUIOp::create(ib, up, step);
    };
    Value inner = nest.size() == 2 ? tripCount(b, nest[1], map) : Value();
    Value begin = arith::IndexCastOp::create(b, b.getIndexType(),
                                             entry->getArgument(1));
    Value end = arith::IndexCastOp::create(b, b.getIndexType(),
                                           entry->getArgument(2));
    Value one = arith::ConstantIndexOp::create(b, 1);
    auto loop = scf::ForOp::create(b, begin, end, one);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value idx = loop.getInductionVar();
      SmallVector<Value> iters = {idx};
      if (inner)
        iters = {arith::DivUIOp::create(b, idx, inner),
                 arith::RemUIOp::create(b, idx, inner)};
      for (auto [l, it] : llvm::zip(nest, iters)) {
        scf::ForOp l2 = l;
        Value lb = map.lookupOrDefault(l2.getLowerBound());
        Value step = map.lookupOrDefault(l2.getStep());
        map.map(l2.getInductionVar(),
                arith::AddIOp::create(b, lb,
                                      arith::MulIOp::create(b, it, step)));
      }
      for (Operation &op : nest.back().getBody()->without_terminator())
        b.clone(op, map);
    }
    func::ReturnOp::create(b);
    task = deduplicate(task);

    // The call site: the struct on the stack, then the pool or a direct
    // call for small loops.
    ImplicitLocOpBuilder cb(loc, outer);
    IRMapping same;
    Value n = tripCount(cb, nest[0], same);
    if (nest.size() == 2)
      n = arith::MulIOp::create(cb, n, tripCount(cb, nest[1], same));
    Value oneI64 = LLVM::ConstantOp::create(cb, i64, cb.getI64IntegerAttr(1));
    Value args = LLVM::AllocaOp::create(cb, ptr, structType, oneI64, 8);
    for (auto [i, v] : llvm::enumerate(captured)) {
      Value field = LLVM::GEPOp::create(
          cb, ptr, structType, args,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      Value stored;
      if (isa<MemRefType>(v.getType()))
        stored = UnrealizedConversionCastOp::create(cb, fields[i], v)
                     .getResult(0);
      else if (v.getType().isIndex())
        stored = arith::IndexCastOp::create(cb, i64, v);
      else
        stored = v;
      LLVM::StoreOp::create(cb, stored, field);
    }
    Value zero = LLVM::ConstantOp::create(cb, i64, cb.getI64IntegerAttr(0));
    Value nI64 = arith::IndexCastOp::create(cb, i64, n);
    if (!parallel) {
      func::CallOp::create(cb, task, ValueRange{args, zero, nI64});
      outer->erase();
      return;
    }
    // Waking the pool costs some microseconds: go parallel only when the
    // loop writes enough, 2^16 elements when an iteration is a row of vector
    // code (with loops of constant trip count at most), 2^12 when
    // iterations hold loops of dynamic trip count or calls (attention: a
    // head's output tile is computed from all its keys), so that a decoding
    // step (one query per head) stays on the calling thread.
    bool heavy = false;
    nest.back().getBody()->walk([&](Operation *op) {
      auto loop = dyn_cast<scf::ForOp>(op);
      if (isa<func::CallOp>(op) ||
          (loop && !(getConstantIntValue(loop.getLowerBound()) &&
                     getConstantIntValue(loop.getUpperBound()))))
        heavy = true;
    });
    Value elements = arith::ConstantIndexOp::create(cb, 0);
    for (Value root : written) {
      auto type = dyn_cast<MemRefType>(root.getType());
      if (!type)
        continue;
      Value size = arith::ConstantIndexOp::create(cb, 1);
      for (int64_t d = 0; d < type.getRank(); ++d)
        size = arith::MulIOp::create(
            cb, size,
            type.isDynamicDim(d)
                ? Value(memref::DimOp::create(cb, root, d))
                : Value(arith::ConstantIndexOp::create(cb, type.getDimSize(d))));
      elements = arith::AddIOp::create(cb, elements, size);
    }
    // The runtime compares: one call, no branch in the glue (a branch per
    // loop split the entry's block, which convert-scf-to-cf and LLVM then
    // paid for).
    func::FuncOp pfor = parallelFor(module, task.getFunctionType());
    Value fn = func::ConstantOp::create(cb, task.getFunctionType(),
                                        SymbolRefAttr::get(task));
    Value work = arith::IndexCastOp::create(cb, i64, elements);
    Value minWork = LLVM::ConstantOp::create(
        cb, i64, cb.getI64IntegerAttr(heavy ? 1 << 12 : 1 << 16));
    func::CallOp::create(cb, pfor, ValueRange{nI64, work, minWork, fn, args});
    outer->erase();
  }
};

} // namespace

std::unique_ptr<Pass> createParallelizeLoopsPass() {
  return std::make_unique<ParallelizeLoopsPass>();
}

void registerParallelizeLoopsPass() {
  PassRegistration<ParallelizeLoopsPass>();
}

} // namespace attn
