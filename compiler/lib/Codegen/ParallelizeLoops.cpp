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
// call is `attn_parallel_for_sized(n, work, min_work, task, arg)`
// (ThreadPoolCall.h): the runtime uses the pool from 2 iterations when the
// buffers the loop writes hold `min_work` elements, the cost model's
// minimum for a loop of vector rows or, lower, for iterations with loops of
// dynamic trip count or calls of their own (as attention's heads), and
// calls the task on [0, n) itself otherwise.
//
// A task whose body equals an earlier task's (the same loop of another
// layer or entry point, on other buffers) is not kept: the call uses the
// earlier one, so each distinct loop is compiled once.
//
//===----------------------------------------------------------------------===//

#include "ThreadPoolCall.h"
#include "attn/Codegen/Passes.h"

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
#define GEN_PASS_DEF_ATTNPARALLELIZELOOPS
#include "attn/Codegen/Passes.h.inc"

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

/// ceil((ub - lb) / step) of `loop`, its bounds looked up in `map`.
Value tripCount(ImplicitLocOpBuilder &b, scf::ForOp loop, IRMapping &map) {
  Value lb = map.lookupOrDefault(loop.getLowerBound());
  Value ub = map.lookupOrDefault(loop.getUpperBound());
  Value step = map.lookupOrDefault(loop.getStep());
  Value span = arith::SubIOp::create(b, ub, lb);
  Value up = arith::AddIOp::create(
      b, span,
      arith::SubIOp::create(b, step, arith::ConstantIndexOp::create(b, 1)));
  return arith::DivUIOp::create(b, up, step);
}

/// What a task needs from above its loop nest: constants, which it
/// rematerialises, and the values it reads from its argument object.
struct Captures {
  SmallVector<Value> captured, constants;
  /// The argument object: one field per captured value (one i64 when
  /// there is none).
  Type argsType;
};

/// The values from above `nest` (its loops' bounds and what the body
/// uses); none when one has a type the argument object cannot carry.
std::optional<Captures> captureValues(ArrayRef<scf::ForOp> nest) {
  scf::ForOp outer = nest.front();
  SetVector<Value> above;
  for (scf::ForOp loop : nest)
    for (Value v : {loop.getLowerBound(), loop.getUpperBound(),
                    loop.getStep()})
      if (!outer.getRegion().isAncestor(v.getParentRegion()))
        above.insert(v);
  getUsedValuesDefinedAbove(outer.getRegion(), above);
  Captures captures;
  SmallVector<Type> fields;
  for (Value v : above) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumOperands() == 0) {
      captures.constants.push_back(v);
      continue;
    }
    Type field = taskFieldType(v.getType());
    if (!field)
      return std::nullopt;
    captures.captured.push_back(v);
    fields.push_back(field);
  }
  MLIRContext *context = outer.getContext();
  Type i64 = IntegerType::get(context, 64);
  captures.argsType = LLVM::LLVMStructType::getLiteral(
      context, fields.empty() ? SmallVector<Type>{i64} : fields);
  return captures;
}

/// Whether an iteration of `loop` holds loops of dynamic trip count or
/// calls (attention: a head's output tile is computed from all its keys),
/// rather than a row of vector code.
bool hasHeavyIterations(scf::ForOp loop) {
  bool heavy = false;
  loop.getBody()->walk([&](Operation *op) {
    auto inner = dyn_cast<scf::ForOp>(op);
    if (isa<func::CallOp>(op) ||
        (inner && !(getConstantIntValue(inner.getLowerBound()) &&
                    getConstantIntValue(inner.getUpperBound()))))
      heavy = true;
  });
  return heavy;
}

/// The elements of the buffers `written` hold (an index), summed at `b`.
Value countElements(ImplicitLocOpBuilder &b, const SetVector<Value> &written) {
  Value elements = arith::ConstantIndexOp::create(b, 0);
  for (Value root : written) {
    auto type = dyn_cast<MemRefType>(root.getType());
    if (!type)
      continue;
    Value size = arith::ConstantIndexOp::create(b, 1);
    for (int64_t d = 0; d < type.getRank(); ++d)
      size = arith::MulIOp::create(
          b, size,
          type.isDynamicDim(d)
              ? Value(memref::DimOp::create(b, root, d))
              : Value(arith::ConstantIndexOp::create(b, type.getDimSize(d))));
    elements = arith::AddIOp::create(b, elements, size);
  }
  return elements;
}

struct ParallelizeLoopsPass
    : impl::AttnParallelizeLoopsBase<ParallelizeLoopsPass> {
  using Base::Base;

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
      // calls): LLVM need not optimise it, and a large model's compile time
      // is mostly LLVM's.
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
  /// buffers, and the buffers travel in the argument struct, so most tasks
  /// are compiled once instead of once per layer and entry point.
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

  /// The task running iterations [begin, end) of `nest` (flattened), its
  /// values from above read from the argument object: an earlier task
  /// with the same body, or a new one named after `parent`.
  func::FuncOp buildTask(ModuleOp module, func::FuncOp parent,
                         ArrayRef<scf::ForOp> nest, const Captures &captures,
                         unsigned index) {
    MLIRContext *context = module.getContext();
    scf::ForOp outer = nest.front(), innermost = nest.back();
    Location loc = outer.getLoc();
    std::string name =
        (parent.getName() + "_par" + llvm::Twine(index)).str();
    func::FuncOp task = createTaskFunction(module, loc, name);
    Block *entry = &task.getBody().front();
    ImplicitLocOpBuilder b(loc, context);
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (Value c : captures.constants)
      map.map(c, b.clone(*c.getDefiningOp())->getResult(0));
    SmallVector<Type> types;
    for (Value v : captures.captured)
      types.push_back(v.getType());
    SmallVector<Value> loaded = loadTaskArguments(
        b, captures.argsType, entry->getArgument(0), types);
    for (auto [v, value] : llvm::zip(captures.captured, loaded))
      map.map(v, value);
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
      for (Operation &op : innermost.getBody()->without_terminator())
        b.clone(op, map);
    }
    func::ReturnOp::create(b);
    return deduplicate(task);
  }

  /// Outlines `nest` into a task; calls it through the pool when
  /// `parallel` (and the loop is large enough), directly otherwise.
  void outline(ModuleOp module, func::FuncOp parent,
               SmallVector<scf::ForOp> nest, const SetVector<Value> &written,
               bool parallel, unsigned index) {
    std::optional<Captures> captures = captureValues(nest);
    if (!captures)
      return; // something the object cannot carry: leave the loop serial
    func::FuncOp task = buildTask(module, parent, nest, *captures, index);

    // The call site: the argument object on the stack, then the pool or a
    // direct call for small loops.
    scf::ForOp outer = nest.front();
    ImplicitLocOpBuilder cb(outer.getLoc(), outer);
    IRMapping same;
    Value n = tripCount(cb, nest[0], same);
    if (nest.size() == 2)
      n = arith::MulIOp::create(cb, n, tripCount(cb, nest[1], same));
    Value args = storeTaskArguments(cb, captures->argsType, captures->captured);
    Type i64 = cb.getI64Type();
    Value zero = LLVM::ConstantOp::create(cb, i64, cb.getI64IntegerAttr(0));
    Value nI64 = arith::IndexCastOp::create(cb, i64, n);
    if (!parallel) {
      func::CallOp::create(cb, task, ValueRange{args, zero, nI64});
      outer->erase();
      return;
    }
    // Waking the pool costs some microseconds: go parallel only when the
    // loop writes enough (the cost model's minimum work, lower for
    // iterations that hold loops or calls than for rows of vector code).
    CpuCostModel model =
        CpuCostModel::forTarget(VectorTarget{lanes, registers});
    int64_t minWork = hasHeavyIterations(nest.back())
                          ? model.parallelLoopMinWorkHeavy
                          : model.parallelLoopMinWork;
    Value elements = countElements(cb, written);
    // The runtime compares: one call, no branch in the glue (a branch per
    // loop split the entry's block, which convert-scf-to-cf and LLVM then
    // paid for).
    callParallelForSized(cb, declareParallelForSized(module), task, nI64,
                         elements, minWork, args);
    outer->erase();
  }
};

} // namespace

} // namespace attn
