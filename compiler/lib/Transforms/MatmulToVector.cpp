//===- MatmulToVector.cpp - Packed, register-tiled matrix products --------===//
//
// `attn-matmul-to-vector`: C[m, n] += sum_k A[m, k] * B[k, n] on buffers
// (B may be stored transposed, as linear layers keep W[out, in]; A may be
// stored transposed, as a weight gradient dY^T X reads dY[rows, out]) becomes
// the loop nest that reached OpenBLAS on this machine (MLIR22-NOTES):
//
//   for n0 in [0, N) step NC:              NC = 128 (512 for A as [K, M])
//     for k0 in [0, K) step KC:            KC = 512 (256 for A as [K, M])
//       pack B[k0:k0+KC, n0:n0+NC] into a 64-byte-aligned KC x NC buffer,
//         zero-padded to whole register tiles (transposing W on the way)
//       for m0 in [0, M - M % MR) step MR:  MR x NR register tile, NR = 2 lanes
//         (A stored [K, M]: pack A[k0:k0+KC, m0:m0+MR] into a KC x MR panel)
//         for n1 in [0, nc) step NR:
//           MR x 2 vector accumulators <- C (masked past N)
//           for k in [0, kc): acc[i][j] = fma(broadcast A[m0+i, k0+k],
//                                             Bp[k, n1 + j*lanes], acc[i][j])
//           C <- accumulators (masked past N)
//       the M % MR rows left: the same with a 1-row tile
//
// With fewer rows than MR (a decoding step: B tokens) and B stored as W[N, K],
// packing would cost as much as the product: the kernel instead takes dot
// products along K, 4 rows x 4 columns of vector accumulators (W read once
// per 4 rows; a single row takes 8 columns, which keeps more rows of W in
// flight: gpt2_small's decode step 33.6 -> 28.1 ms on one thread, the
// weight-streaming bound being 27.6), and one horizontal reduction per
// element of C.
//
// The loop nest is emitted once per module and kind (A as [M, K] or [K, M],
// B as [K, N] or [N, K]) in an internal function,
// `__attn_sgemm_{n,t}{n,t}_<lanes>x<regs>(A, B, C, nBegin, nEnd)` over dynamic
// sizes and strides (unit innermost stride),
// computing the columns [nBegin, nEnd) of C; each product becomes a call.
// The pack lives on the stack of the call. (Inlining one copy per product
// made gpt2_small's 146 products take a minute of compile time.)
//
// With AVX-512 (16 lanes, 32 registers) the tile is 8 x 32: 16 accumulators,
// 2 B vectors and a broadcast per k, 16 FMAs. With AVX2 (8 lanes, 16
// registers) it is 6 x 16: 12 accumulators. M (B * T) is dynamic; N and K
// are usually static, and any of them may be dynamic.
//
//===----------------------------------------------------------------------===//

#include "MatmulMatch.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace attn {
namespace {

/// Outer block sizes (MLIR22-NOTES): a packed B block of 512 x 128 f32 is
/// 256 KiB, which stays in L2 while rows of A stream through L1.
constexpr int64_t kBlockN = 128;
constexpr int64_t kBlockK = 512;
/// With A stored [K, M] (weight gradients) each register tile's rows of A
/// are first copied into a panel, once per column block of B: blocks of
/// 256 x 512 copy each panel for 16 register tiles instead of 4. gpt2_small's
/// weight gradients at 2048 tokens went from 82-91 to 92-99 GFLOP/s on one
/// thread (fc: 157 to 177 on two); the other kinds measured no better with
/// these sizes.
constexpr int64_t kBlockNTransposedA = 512;
constexpr int64_t kBlockKTransposedA = 256;

/// An epilogue (MatmulMatch.h) inside a kernel: the matched op, whose body
/// is cloned onto vectors, and the kernel's arguments that stand for its
/// extra inputs (as matrices: [1, N] for a row vector) and its output.
struct KernelEpilogue {
  const Epilogue &match;
  SmallVector<Value> extras;
  Value out;

  Block &body() const {
    linalg::GenericOp op = match.op;
    return op.getRegion().front();
  }
};

class MatmulEmitter {
public:
  MatmulEmitter(ImplicitLocOpBuilder &b, const MatmulOperands &operands,
                VectorTarget target, bool zeroInit,
                const KernelEpilogue *epilogue)
      : b(b), ops(operands), lanes(target.lanes),
        rows(target.registers >= 32 ? 8 : 6), cols(2 * target.lanes),
        zeroInit(zeroInit), epilogue(epilogue) {}

  /// The product over columns [nBegin, nEnd) of C, at the builder's
  /// insertion point (the body of the kernel function).
  void emit(Value nBegin, Value nEnd) {
    f32 = b.getF32Type();
    vecType = VectorType::get({lanes}, f32);
    zeroF = arith::ConstantOp::create(b, b.getF32FloatAttr(0));
    zeroV = arith::ConstantOp::create(
        b, DenseElementsAttr::get(vecType, b.getF32FloatAttr(0)));
    if (!ops.transposedB || ops.transposedA)
      return emitPacked(nBegin, nEnd);
    // Fewer rows than a register tile (a decoding step's B tokens): packing
    // W would cost more than the product; dot products along K instead.
    Value m = rowsOfA();
    Value few = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, m,
                                      index(rows));
    auto branch = scf::IfOp::create(b, few, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    emitDots(nBegin, nEnd);
    b.setInsertionPointToStart(branch.elseBlock());
    emitPacked(nBegin, nEnd);
  }

  /// C[m, n] += A[m, :] . W[n, :] for W stored [N, K]: groups of up to 4
  /// rows x 4 columns (2 with 16 registers; for a single row twice the
  /// columns, or one column at a time when W streams from memory, below) of
  /// vector accumulators along K,
  /// one horizontal reduction per element of C. W is read once per group of
  /// rows, not packed.
  void emitDots(Value nBegin, Value nEnd) {
    int64_t cols4 = rows >= 8 ? 4 : 2;
    Value m = memref::DimOp::create(b, ops.a, 0);
    Value k = memref::DimOp::create(b, ops.a, 1);
    Value kFull = arith::SubIOp::create(
        b, k, arith::RemSIOp::create(b, k, index(lanes)));
    Value mFull = arith::SubIOp::create(b, m,
                                        arith::RemSIOp::create(b, m, index(4)));
    Value span = arith::SubIOp::create(b, nEnd, nBegin);
    auto loop = [&](ImplicitLocOpBuilder &ib, Value from, Value to,
                    int64_t step, function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
      scf::ForOp::create(ib, from, to, index(ib, step), ValueRange{},
                         [&](OpBuilder &nb, Location loc, Value iv, ValueRange) {
                           ImplicitLocOpBuilder lb(loc, nb);
                           body(lb, iv);
                           scf::YieldOp::create(lb);
                         });
    };
    // Rows m0..m0+mr times the columns in tiles of nr, then one by one.
    auto columnTiles = [&](ImplicitLocOpBuilder &ib, Value m0, int64_t mr,
                           int64_t nr) {
      Value nFull = arith::SubIOp::create(
          ib, nEnd, arith::RemSIOp::create(ib, span, index(ib, nr)));
      loop(ib, nBegin, nFull, nr, [&](ImplicitLocOpBuilder &jb, Value n0) {
        emitDotTile(jb, m0, mr, n0, nr, k, kFull);
      });
      loop(ib, nFull, nEnd, 1, [&](ImplicitLocOpBuilder &jb, Value n0) {
        emitDotTile(jb, m0, mr, n0, 1, k, kFull);
      });
    };
    // One row (a decoding step of one sequence) reads W at memory speed.
    // While W stays in cache (under 2^18 elements, 1 MiB), 1 x 8 tiles (with
    // 32 registers): twice the columns of the 4-row groups. A larger W
    // streams from memory: then each element of C is one dot product reading
    // its row of W front to back, so that the loop over columns reads W as
    // one sequential stream (emitRowDot). Measured side by side,
    // gpt2_small's decode step went 1.19-1.21x faster on one thread and
    // 0.99-1.09x on two than with 1 x 12 tiles, themselves 1.08-1.11x /
    // 1.02-1.15x faster than 1 x 8; on a host at half the bandwidth the row
    // order measured the same on one thread.
    auto rowGroup = [&](ImplicitLocOpBuilder &ib, Value m0, int64_t mr) {
      if (mr != 1)
        return columnTiles(ib, m0, mr, cols4);
      Value wElements = arith::MulIOp::create(
          ib, k, memref::DimOp::create(ib, ops.b, 0));
      Value streamed = arith::CmpIOp::create(
          ib, arith::CmpIPredicate::uge, wElements, index(ib, 1 << 18));
      auto branch = scf::IfOp::create(ib, streamed, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(ib);
      ib.setInsertionPointToStart(branch.thenBlock());
      loop(ib, nBegin, nEnd, 1, [&](ImplicitLocOpBuilder &jb, Value n0) {
        emitRowDot(jb, m0, n0, k, kFull);
      });
      ib.setInsertionPointToStart(branch.elseBlock());
      columnTiles(ib, m0, mr, 2 * cols4);
    };
    loop(b, index(0), mFull, 4,
         [&](ImplicitLocOpBuilder &ib, Value m0) { rowGroup(ib, m0, 4); });
    loop(b, mFull, m, 1,
         [&](ImplicitLocOpBuilder &ib, Value m0) { rowGroup(ib, m0, 1); });
    if (!epilogue)
      return;
    // The epilogue over the few rows just computed (still in cache), one
    // vector at a time: the dot products end in scalars.
    loop(b, index(0), m, 1, [&](ImplicitLocOpBuilder &ib, Value row) {
      loop(ib, nBegin, nEnd, lanes, [&](ImplicitLocOpBuilder &jb, Value col) {
        Value c = vector::TransferReadOp::create(
            jb, vecType, ops.c, ValueRange{row, col}, zeroF,
            ArrayRef<bool>{false});
        storeEpilogue(jb, c, row, col, readRowVectors(jb, col));
      });
    });
  }

  /// The row-vector inputs of the epilogue at columns col..col+lanes.
  SmallVector<Value> readRowVectors(ImplicitLocOpBuilder &ib, Value col) {
    SmallVector<Value> values;
    for (auto [extra, row] :
         llvm::zip(epilogue->extras, epilogue->match.rowVector))
      values.push_back(row ? vector::TransferReadOp::create(
                                 ib, vecType, extra,
                                 ValueRange{index(ib, 0), col}, zeroF,
                                 ArrayRef<bool>{false})
                           : Value());
    return values;
  }

  /// out[row, col..col+lanes] = epilogue(acc, inputs there); `rowVectors`
  /// holds the row-vector inputs already read (null for the others).
  void storeEpilogue(ImplicitLocOpBuilder &ib, Value acc, Value row, Value col,
                     ArrayRef<Value> rowVectors) {
    Block *body = &epilogue->body();
    IRMapping map;
    unsigned e = 0;
    for (BlockArgument arg : body->getArguments().drop_back()) {
      if (arg.getArgNumber() == epilogue->match.productInput) {
        map.map(arg, acc);
        continue;
      }
      Value v = rowVectors[e];
      if (!v)
        v = vector::TransferReadOp::create(ib, vecType, epilogue->extras[e],
                                           ValueRange{row, col}, zeroF,
                                           ArrayRef<bool>{false});
      map.map(arg, v);
      ++e;
    }
    // Constants (inside the body or captured from outside) as splats.
    auto lookup = [&](Value v) -> Value {
      if (Value mapped = map.lookupOrNull(v))
        return mapped;
      auto constant = v.getDefiningOp<arith::ConstantOp>();
      Value splat = arith::ConstantOp::create(
          ib, DenseElementsAttr::get(VectorType::get({lanes}, v.getType()),
                                     ArrayRef<Attribute>{constant.getValue()}));
      map.map(v, splat);
      return splat;
    };
    for (Operation &op : body->without_terminator()) {
      if (isa<arith::ConstantOp>(op))
        continue;
      OperationState state(ib.getLoc(), op.getName());
      for (Value operand : op.getOperands())
        state.addOperands(lookup(operand));
      state.addAttributes(op.getAttrs());
      state.addTypes(VectorType::get({lanes}, op.getResult(0).getType()));
      map.map(op.getResult(0), ib.create(state)->getResult(0));
    }
    vector::TransferWriteOp::create(
        ib, lookup(body->getTerminator()->getOperand(0)), epilogue->out,
        ValueRange{row, col}, ArrayRef<bool>{false});
  }

  /// C[m, n] (+)= A[m, :] . W[n, :] for one row and one column, reading W's
  /// row n front to back with 4 accumulators (4 lanes-wide steps per
  /// iteration), so that a loop over n reads W as one sequential stream.
  void emitRowDot(ImplicitLocOpBuilder &ib, Value m, Value n, Value k,
                  Value kFull) {
    constexpr int64_t kUnroll = 4;
    Value kUnrolled = arith::SubIOp::create(
        ib, k, arith::RemSIOp::create(ib, k, index(ib, kUnroll * lanes)));
    auto fma = [&](ImplicitLocOpBuilder &lb, Value kk, Value acc,
                   bool inBounds) -> Value {
      Value w = vector::TransferReadOp::create(lb, vecType, ops.b,
                                               ValueRange{n, kk}, zeroF,
                                               ArrayRef<bool>{inBounds});
      Value a = vector::TransferReadOp::create(lb, vecType, ops.a,
                                               ValueRange{m, kk}, zeroF,
                                               ArrayRef<bool>{inBounds});
      return vector::FMAOp::create(lb, a, w, acc);
    };
    auto unrolled = scf::ForOp::create(
        ib, index(ib, 0), kUnrolled, index(ib, kUnroll * lanes),
        SmallVector<Value>(kUnroll, zeroV),
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
          ImplicitLocOpBuilder lb(loc, kb);
          SmallVector<Value> next;
          for (int64_t u = 0; u < kUnroll; ++u)
            next.push_back(fma(
                lb, arith::AddIOp::create(lb, kk, index(lb, u * lanes)),
                acc[u], /*inBounds=*/true));
          scf::YieldOp::create(lb, next);
        });
    SmallVector<Value> acc(unrolled.getResults());
    auto rest = scf::ForOp::create(
        ib, kUnrolled, kFull, index(ib, lanes), ValueRange{acc[0]},
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc0) {
          ImplicitLocOpBuilder lb(loc, kb);
          scf::YieldOp::create(lb, fma(lb, kk, acc0[0], /*inBounds=*/true));
        });
    acc[0] = fma(ib, kFull, rest.getResult(0), /*inBounds=*/false);
    Value total = arith::AddFOp::create(
        ib, arith::AddFOp::create(ib, acc[0], acc[1]),
        arith::AddFOp::create(ib, acc[2], acc[3]));
    storeDot(ib, total, m, n);
  }

  /// C[row, col] (+)= the sum of the lanes of `acc`: added to C's value, or
  /// stored alone with zeroInit.
  void storeDot(ImplicitLocOpBuilder &ib, Value acc, Value row, Value col) {
    Value sum = vector::ReductionOp::create(ib, vector::CombiningKind::ADD, acc);
    if (!zeroInit)
      sum = arith::AddFOp::create(
          ib, memref::LoadOp::create(ib, ops.c, ValueRange{row, col}), sum);
    memref::StoreOp::create(ib, sum, ops.c, ValueRange{row, col});
  }

  void emitDotTile(ImplicitLocOpBuilder &ib, Value m0, int64_t mr, Value n0,
                   int64_t nr, Value k, Value kFull) {
    SmallVector<Value> rowIdx, colIdx;
    for (int64_t i = 0; i < mr; ++i)
      rowIdx.push_back(i ? arith::AddIOp::create(ib, m0, index(ib, i)) : m0);
    for (int64_t j = 0; j < nr; ++j)
      colIdx.push_back(j ? arith::AddIOp::create(ib, n0, index(ib, j)) : n0);
    SmallVector<Value> init(mr * nr, zeroV);
    // One step of the dot products at kk; `inBounds` false masks past K.
    auto step = [&](ImplicitLocOpBuilder &lb, Value kk, ValueRange acc,
                    bool inBounds) {
      SmallVector<Value> w, a, next;
      for (int64_t j = 0; j < nr; ++j)
        w.push_back(vector::TransferReadOp::create(
            lb, vecType, ops.b, ValueRange{colIdx[j], kk}, zeroF,
            ArrayRef<bool>{inBounds}));
      for (int64_t i = 0; i < mr; ++i)
        a.push_back(vector::TransferReadOp::create(
            lb, vecType, ops.a, ValueRange{rowIdx[i], kk}, zeroF,
            ArrayRef<bool>{inBounds}));
      for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < nr; ++j)
          next.push_back(vector::FMAOp::create(lb, a[i], w[j], acc[i * nr + j]));
      return next;
    };
    auto loop = scf::ForOp::create(
        ib, index(ib, 0), kFull, index(ib, lanes), init,
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
          ImplicitLocOpBuilder lb(loc, kb);
          scf::YieldOp::create(lb, step(lb, kk, acc, /*inBounds=*/true));
        });
    // The last K % lanes elements, masked (nothing when K is a multiple).
    SmallVector<Value> acc = step(ib, kFull, loop.getResults(), false);
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t j = 0; j < nr; ++j)
        storeDot(ib, acc[i * nr + j], rowIdx[i], colIdx[j]);
  }

  /// The packed, register-tiled product (the file comment's loop nest).
  void emitPacked(Value nBegin, Value nEnd) {
    int64_t blockN = ops.transposedA ? kBlockNTransposedA : kBlockN;
    int64_t blockK = ops.transposedA ? kBlockKTransposedA : kBlockK;
    Value zero = index(0);
    Value m = rowsOfA();
    Value k = memref::DimOp::create(b, ops.a, ops.transposedA ? 0 : 1);
    // The pack holds one block, or less when N or K is smaller (attention's
    // products need a few KiB, not 256): on the stack of this call.
    Value packRows = arith::MinSIOp::create(b, index(blockK),
                                            roundUp(b, k, lanes));
    Value packCols = arith::MinSIOp::create(
        b, index(blockN), roundUp(b, arith::SubIOp::create(b, nEnd, nBegin), cols));
    auto packType =
        MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, f32);
    Value packed = memref::AllocaOp::create(b, packType,
                                            ValueRange{packRows, packCols},
                                            b.getI64IntegerAttr(64));
    // A stored [K, M]: the rows of one register tile, a column block of A,
    // copied into a KC x MR panel so that the tile reads it contiguously.
    Value panel;
    if (ops.transposedA)
      panel = memref::AllocaOp::create(
          b, MemRefType::get({blockK, rows}, f32), ValueRange{},
          b.getI64IntegerAttr(64));
    // Rows covered by whole MR-row tiles.
    Value fullRows = arith::SubIOp::create(
        b, m, arith::RemSIOp::create(b, m, index(rows)));
    scf::ForOp::create(
        b, nBegin, nEnd, index(blockN), ValueRange{},
        [&](OpBuilder &nb, Location loc, Value n0, ValueRange) {
          ImplicitLocOpBuilder ib(loc, nb);
          Value nc = arith::MinSIOp::create(
              ib, index(blockN), arith::SubIOp::create(ib, nEnd, n0));
          scf::ForOp::create(
              ib, zero, k, index(blockK), ValueRange{},
              [&](OpBuilder &kb, Location loc, Value k0, ValueRange) {
                ImplicitLocOpBuilder jb(loc, kb);
                Value kc = arith::MinSIOp::create(
                    jb, index(blockK), arith::SubIOp::create(jb, k, k0));
                // Whole register tiles of columns (the pack is zero-padded).
                Value ncTiles = roundUp(jb, nc, cols);
                emitPack(jb, packed, n0, k0, nc, kc, ncTiles);
                auto rowLoop = [&](Value from, Value to, int64_t mr) {
                  scf::ForOp::create(
                      jb, from, to, index(mr), ValueRange{},
                      [&](OpBuilder &mb, Location loc, Value m0, ValueRange) {
                        ImplicitLocOpBuilder ob(loc, mb);
                        if (panel)
                          emitPanel(ob, panel, m0, k0, kc, mr);
                        scf::ForOp::create(
                            ob, index(0), nc, index(cols), ValueRange{},
                            [&](OpBuilder &tb, Location loc, Value n1,
                                ValueRange) {
                              ImplicitLocOpBuilder tib(loc, tb);
                              emitTile(tib, packed, panel, m0, n0, n1, k0, kc,
                                       k, mr);
                              scf::YieldOp::create(tib);
                            });
                        scf::YieldOp::create(ob);
                      });
                };
                rowLoop(index(0), fullRows, rows);
                rowLoop(fullRows, m, 1);
                scf::YieldOp::create(jb);
              });
          scf::YieldOp::create(ib);
        });
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }

  /// M, the rows of C.
  Value rowsOfA() {
    return memref::DimOp::create(b, ops.a, ops.transposedA ? 1 : 0);
  }

  /// panel[kk, i] = A^T[k0 + kk, m0 + i] for kk < kc, i < mr: one vector
  /// of mr lanes per k (all in bounds: a tile's rows are below M).
  void emitPanel(ImplicitLocOpBuilder &ib, Value panel, Value m0, Value k0,
                 Value kc, int64_t mr) {
    auto rowType = VectorType::get({mr}, f32);
    scf::ForOp::create(
        ib, index(ib, 0), kc, index(ib, 1), ValueRange{},
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
          ImplicitLocOpBuilder pb(loc, kb);
          Value row = arith::AddIOp::create(pb, k0, kk);
          Value v = vector::TransferReadOp::create(
              pb, rowType, ops.a, ValueRange{row, m0}, zeroF,
              ArrayRef<bool>{true});
          vector::TransferWriteOp::create(pb, v, panel,
                                          ValueRange{kk, index(pb, 0)},
                                          ArrayRef<bool>{true});
          scf::YieldOp::create(pb);
        });
  }
  Value index(ImplicitLocOpBuilder &ib, int64_t v) {
    return arith::ConstantIndexOp::create(ib, v);
  }

  /// ceil(v / multiple) * multiple.
  Value roundUp(ImplicitLocOpBuilder &ib, Value v, int64_t multiple) {
    Value c = index(ib, multiple);
    Value up = arith::AddIOp::create(ib, v, index(ib, multiple - 1));
    return arith::MulIOp::create(ib, arith::DivUIOp::create(ib, up, c), c);
  }

  /// packed[kk, nn] = B[k0 + kk, n0 + nn] for kk < kc, nn < ncTiles, zero
  /// past the edges of B.
  void emitPack(ImplicitLocOpBuilder &ib, Value packed, Value n0, Value k0,
                Value nc, Value kc, Value ncTiles) {
    Value zero = index(ib, 0);
    if (ops.transposedB) {
      // B is W[N, K]: read lanes x lanes blocks of W (rows n, columns k),
      // transpose them in registers, store rows k of the pack.
      auto blockType = VectorType::get({lanes, lanes}, f32);
      scf::ForOp::create(
          ib, zero, kc, index(ib, lanes), ValueRange{},
          [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
            ImplicitLocOpBuilder jb(loc, kb);
            scf::ForOp::create(
                jb, index(jb, 0), ncTiles, index(jb, lanes), ValueRange{},
                [&](OpBuilder &nb, Location loc, Value nn, ValueRange) {
                  ImplicitLocOpBuilder pb(loc, nb);
                  Value row = arith::AddIOp::create(pb, n0, nn);
                  Value col = arith::AddIOp::create(pb, k0, kk);
                  Value block = vector::TransferReadOp::create(
                      pb, blockType, ops.b, ValueRange{row, col}, zeroF,
                      ArrayRef<bool>{false, false});
                  Value transposed =
                      vector::TransposeOp::create(pb, block, ArrayRef<int64_t>{1, 0});
                  vector::TransferWriteOp::create(
                      pb, transposed, packed, ValueRange{kk, nn},
                      ArrayRef<bool>{true, true});
                  scf::YieldOp::create(pb);
                });
            scf::YieldOp::create(jb);
          });
      return;
    }
    // B is [K, N]: copy rows.
    scf::ForOp::create(
        ib, zero, kc, index(ib, 1), ValueRange{},
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
          ImplicitLocOpBuilder jb(loc, kb);
          scf::ForOp::create(
              jb, index(jb, 0), ncTiles, index(jb, lanes), ValueRange{},
              [&](OpBuilder &nb, Location loc, Value nn, ValueRange) {
                ImplicitLocOpBuilder pb(loc, nb);
                Value row = arith::AddIOp::create(pb, k0, kk);
                Value col = arith::AddIOp::create(pb, n0, nn);
                Value v = vector::TransferReadOp::create(
                    pb, vecType, ops.b, ValueRange{row, col}, zeroF,
                    ArrayRef<bool>{false});
                vector::StoreOp::create(pb, v, packed, ValueRange{kk, nn});
                scf::YieldOp::create(pb);
              });
          scf::YieldOp::create(jb);
        });
  }

  /// One mr x cols register tile at rows m0.., columns n0 + n1.., over the
  /// packed k block [k0, k0 + kc) of [0, k); A's elements from `panel` when
  /// A is stored [K, M]. With zeroInit the first block starts from zeros; with
  /// an epilogue the last block stores epilogue(tile) into its output instead
  /// of storing C.
  void emitTile(ImplicitLocOpBuilder &ib, Value packed, Value panel, Value m0,
                Value n0, Value n1, Value k0, Value kc, Value k, int64_t mr) {
    int64_t nv = cols / lanes;
    SmallVector<Value> rowIdx, colIdx;
    for (int64_t i = 0; i < mr; ++i)
      rowIdx.push_back(i ? arith::AddIOp::create(ib, m0, index(ib, i)) : m0);
    Value nBase = arith::AddIOp::create(ib, n0, n1);
    for (int64_t j = 0; j < nv; ++j)
      colIdx.push_back(j ? arith::AddIOp::create(ib, nBase, index(ib, j * lanes))
                         : nBase);
    auto readC = [&](ImplicitLocOpBuilder &rb) {
      SmallVector<Value> tile;
      for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < nv; ++j)
          tile.push_back(vector::TransferReadOp::create(
              rb, vecType, ops.c, ValueRange{rowIdx[i], colIdx[j]}, zeroF,
              ArrayRef<bool>{false}));
      return tile;
    };
    SmallVector<Value> acc;
    if (zeroInit) {
      Value first = arith::CmpIOp::create(ib, arith::CmpIPredicate::eq, k0,
                                          index(ib, 0));
      auto init = scf::IfOp::create(
          ib, SmallVector<Type>(mr * nv, vecType), first,
          /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(ib);
      ib.setInsertionPointToStart(init.thenBlock());
      scf::YieldOp::create(ib, SmallVector<Value>(mr * nv, zeroV));
      ib.setInsertionPointToStart(init.elseBlock());
      scf::YieldOp::create(ib, readC(ib));
      acc.assign(init.getResults().begin(), init.getResults().end());
    } else {
      acc = readC(ib);
    }
    auto loop = scf::ForOp::create(
        ib, index(ib, 0), kc, index(ib, 1), acc,
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange state) {
          ImplicitLocOpBuilder lb(loc, kb);
          SmallVector<Value> bv;
          for (int64_t j = 0; j < nv; ++j) {
            Value col = j ? arith::AddIOp::create(lb, n1, index(lb, j * lanes))
                          : n1;
            bv.push_back(vector::LoadOp::create(lb, vecType, packed,
                                                ValueRange{kk, col}));
          }
          Value kIdx = arith::AddIOp::create(lb, k0, kk);
          SmallVector<Value> next;
          for (int64_t i = 0; i < mr; ++i) {
            Value a =
                panel ? memref::LoadOp::create(lb, panel,
                                               ValueRange{kk, index(lb, i)})
                      : memref::LoadOp::create(lb, ops.a,
                                               ValueRange{rowIdx[i], kIdx});
            Value av = vector::BroadcastOp::create(lb, vecType, a);
            for (int64_t j = 0; j < nv; ++j)
              next.push_back(
                  vector::FMAOp::create(lb, av, bv[j], state[i * nv + j]));
          }
          scf::YieldOp::create(lb, next);
        });
    auto storeC = [&](ImplicitLocOpBuilder &sb) {
      for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < nv; ++j)
          vector::TransferWriteOp::create(sb, loop.getResult(i * nv + j),
                                          ops.c,
                                          ValueRange{rowIdx[i], colIdx[j]},
                                          ArrayRef<bool>{false});
    };
    if (!epilogue)
      return storeC(ib);
    Value last = arith::CmpIOp::create(
        ib, arith::CmpIPredicate::eq, arith::AddIOp::create(ib, k0, kc), k);
    auto branch = scf::IfOp::create(ib, last, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(ib);
    ib.setInsertionPointToStart(branch.thenBlock());
    for (int64_t j = 0; j < nv; ++j) {
      SmallVector<Value> rowVectors = readRowVectors(ib, colIdx[j]);
      for (int64_t i = 0; i < mr; ++i)
        storeEpilogue(ib, loop.getResult(i * nv + j), rowIdx[i], colIdx[j],
                      rowVectors);
    }
    ib.setInsertionPointToStart(branch.elseBlock());
    storeC(ib);
  }

  ImplicitLocOpBuilder &b;
  MatmulOperands ops;
  int64_t lanes, rows, cols;
  bool zeroInit;
  const KernelEpilogue *epilogue;
  Type f32;
  VectorType vecType;
  Value zeroF, zeroV; // 0.0 and a vector of zeros, at the kernel's entry
};

/// The operand type every kernel takes: any 2-D f32 buffer with unit
/// innermost stride.
MemRefType kernelOperandType(MLIRContext *context) {
  int64_t d = ShapedType::kDynamic;
  return MemRefType::get(
      {d, d}, Float32Type::get(context),
      StridedLayoutAttr::get(context, d, ArrayRef<int64_t>{d, 1}));
}

struct MatmulToVectorPass
    : PassWrapper<MatmulToVectorPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MatmulToVectorPass)

  MatmulToVectorPass() = default;
  MatmulToVectorPass(const MatmulToVectorPass &other) : PassWrapper(other) {}
  explicit MatmulToVectorPass(VectorTarget target) {
    lanes = target.lanes;
    registers = target.registers;
  }

  StringRef getArgument() const override { return "attn-matmul-to-vector"; }
  StringRef getDescription() const override {
    return "Packed, register-tiled vector loops for 2-D f32 matrix products "
           "on buffers";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect,
                    LLVM::LLVMDialect, memref::MemRefDialect, scf::SCFDialect,
                    vector::VectorDialect>();
  }

  /// The kernel function for A stored as [M, K] or [K, M] and B as [K, N]
  /// or [N, K], starting from C or from zeros, with or without an epilogue:
  /// one per module and kind, internal, shared by every product of that
  /// kind:
  ///   (A, B, C, nBegin, nEnd, E1..En, Out) computes C[:, nBegin:nEnd] += A
  ///   * B (C = A * B with `zeroInit`), or, with an epilogue, Out[:,
  ///   nBegin:nEnd] = epilogue(A * B, E1..En) (C then holds partial sums
  ///   when K spans several blocks, and is not written otherwise).
  /// `epilogueIndex` numbers the module's distinct epilogues (-1: none).
  func::FuncOp kernel(ModuleOp module, const MatmulOperands &operands,
                      bool zeroInit, const Epilogue *epilogue,
                      int epilogueIndex) {
    std::string name = (llvm::Twine("__attn_sgemm_") +
                        (operands.transposedA ? "t" : "n") +
                        (operands.transposedB ? "t" : "n") + "_" +
                        llvm::Twine(static_cast<int64_t>(lanes)) + "x" +
                        llvm::Twine(static_cast<int64_t>(registers)) +
                        (zeroInit ? "_z" : ""))
                           .str();
    if (epilogue)
      name += "_e" + std::to_string(epilogueIndex);
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    MLIRContext *context = module.getContext();
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    MemRefType operand = kernelOperandType(context);
    Type index = mb.getIndexType();
    SmallVector<Type> inputs = {operand, operand, operand, index, index};
    if (epilogue)
      inputs.append(epilogue->extras.size() + 1, operand);
    auto type = mb.getFunctionType(inputs, {});
    auto func = func::FuncOp::create(mb, loc, name, type);
    func.setPrivate();
    // Internal linkage: every model object has its own copy.
    func->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
    Block *entry = func.addEntryBlock();
    ImplicitLocOpBuilder b(loc, context);
    b.setInsertionPointToStart(entry);
    MatmulOperands ops{entry->getArgument(0), entry->getArgument(1),
                       entry->getArgument(2), operands.transposedB,
                       operands.transposedA};
    std::optional<KernelEpilogue> kernelEpilogue;
    if (epilogue) {
      // (A, B, C, nBegin, nEnd, E1..En, Out)
      auto args = entry->getArguments().drop_front(5);
      kernelEpilogue.emplace(KernelEpilogue{
          *epilogue, SmallVector<Value>(args.drop_back()), args.back()});
    }
    MatmulEmitter(b, ops, VectorTarget{lanes, registers}, zeroInit,
                  kernelEpilogue ? &*kernelEpilogue : nullptr)
        .emit(entry->getArgument(3), entry->getArgument(4));
    func::ReturnOp::create(b);
    return func;
  }

  /// The descriptor of a rank-2 memref once lowered to LLVM.
  static Type descriptorType(MLIRContext *context) {
    Type ptr = LLVM::LLVMPointerType::get(context);
    Type i64 = IntegerType::get(context, 64);
    Type dims = LLVM::LLVMArrayType::get(i64, 2);
    return LLVM::LLVMStructType::getLiteral(context,
                                            {ptr, ptr, i64, dims, dims});
  }

  /// `attn_parallel_for(pool, n, fn, arg)` of the runtime
  /// (runtime/include/attn/runtime.h), declared in the module.
  func::FuncOp parallelFor(ModuleOp module, FunctionType taskType) {
    StringRef name = "attn_parallel_for";
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    Type ptr = LLVM::LLVMPointerType::get(module.getContext());
    auto type = mb.getFunctionType({ptr, mb.getI64Type(), taskType, ptr}, {});
    auto func = func::FuncOp::create(mb, module.getLoc(), name, type);
    func.setPrivate();
    return func;
  }

  /// The loop body the pool runs, `void task(void *arg, int64_t begin,
  /// int64_t end)`: `arg` holds the descriptors of the kernel's buffers (A,
  /// B, C, then the epilogue's); [begin, end) is a range of column tiles
  /// (2 * lanes columns each).
  func::FuncOp task(ModuleOp module, func::FuncOp kernel, int32_t buffers) {
    std::string name = (kernel.getName() + "_task").str();
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    MLIRContext *context = module.getContext();
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(context);
    Type i64 = mb.getI64Type();
    auto func = func::FuncOp::create(mb, loc, name,
                                     mb.getFunctionType({ptr, i64, i64}, {}));
    func.setPrivate();
    func->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
    Block *entry = func.addEntryBlock();
    ImplicitLocOpBuilder b(loc, context);
    b.setInsertionPointToStart(entry);
    Type desc = descriptorType(context);
    auto argsType = LLVM::LLVMArrayType::get(desc, buffers);
    MemRefType operand = kernelOperandType(context);
    SmallVector<Value> operands;
    for (int32_t i = 0; i < buffers; ++i) {
      Value field = LLVM::GEPOp::create(
          b, ptr, argsType, entry->getArgument(0),
          ArrayRef<LLVM::GEPArg>{0, i});
      Value d = LLVM::LoadOp::create(b, desc, field);
      operands.push_back(
          UnrealizedConversionCastOp::create(b, operand, d).getResult(0));
    }
    Value cols = arith::ConstantIndexOp::create(b, 2 * lanes);
    auto toIndex = [&](Value v) {
      return arith::IndexCastOp::create(b, b.getIndexType(), v);
    };
    Value n = memref::DimOp::create(b, operands[2], 1);
    Value nBegin = arith::MulIOp::create(b, toIndex(entry->getArgument(1)), cols);
    Value nEnd = arith::MinSIOp::create(
        b, n, arith::MulIOp::create(b, toIndex(entry->getArgument(2)), cols));
    operands.insert(operands.begin() + 3, {nBegin, nEnd});
    func::CallOp::create(b, kernel, operands);
    func::ReturnOp::create(b);
    return func;
  }

  /// The entry of the products: (A, B, C) -> C += A B over the context's
  /// thread pool, split by column tiles when the product has at least two
  /// tiles and either 2^20 multiply-adds or a B of 2^16 elements or more.
  /// Smaller products, such as attention's tiles, would spend more waking
  /// the pool than computing; a decoding step's products (M = 1..8) are
  /// few multiply-adds but stream all of B from memory, which two cores
  /// read faster than one.
  func::FuncOp dispatcher(ModuleOp module, func::FuncOp kernel,
                          bool transposedA) {
    std::string name = (kernel.getName() + "_parallel").str();
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    MLIRContext *context = module.getContext();
    // The kernel's buffers: all its arguments but nBegin and nEnd.
    int32_t buffers = kernel.getNumArguments() - 2;
    func::FuncOp body = task(module, kernel, buffers);
    func::FuncOp pfor = parallelFor(module, body.getFunctionType());
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    MemRefType operand = kernelOperandType(context);
    auto func = func::FuncOp::create(
        mb, loc, name,
        mb.getFunctionType(SmallVector<Type>(buffers, operand), {}));
    func.setPrivate();
    func->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
    Block *entry = func.addEntryBlock();
    ImplicitLocOpBuilder b(loc, context);
    b.setInsertionPointToStart(entry);
    Value a = entry->getArgument(0), bm = entry->getArgument(1),
          c = entry->getArgument(2);
    // A is [M, K], or [K, M] for the `t?` kernels.
    Value m = memref::DimOp::create(b, a, transposedA ? 1 : 0);
    Value k = memref::DimOp::create(b, a, transposedA ? 0 : 1);
    Value n = memref::DimOp::create(b, c, 1);
    Value cols = arith::ConstantIndexOp::create(b, 2 * lanes);
    Value tiles = arith::DivUIOp::create(
        b,
        arith::AddIOp::create(b, n,
                              arith::ConstantIndexOp::create(b, 2 * lanes - 1)),
        cols);
    Value bElements = arith::MulIOp::create(b, n, k);
    Value work = arith::MulIOp::create(b, bElements, m);
    Value large = arith::OrIOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, work,
                              arith::ConstantIndexOp::create(b, 1 << 20)),
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, bElements,
                              arith::ConstantIndexOp::create(b, 1 << 16)));
    Value big = arith::AndIOp::create(
        b, large,
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, tiles,
                              arith::ConstantIndexOp::create(b, 2)));
    Value zero = arith::ConstantIndexOp::create(b, 0);
    scf::IfOp::create(
        b, big,
        [&](OpBuilder &tb, Location loc) {
          ImplicitLocOpBuilder ib(loc, tb);
          Type ptr = LLVM::LLVMPointerType::get(context);
          Type desc = descriptorType(context);
          auto argsType = LLVM::LLVMArrayType::get(desc, buffers);
          Value one = LLVM::ConstantOp::create(ib, ib.getI64Type(),
                                               ib.getI64IntegerAttr(1));
          Value args = LLVM::AllocaOp::create(ib, ptr, argsType, one, 8);
          for (auto [i, v] : llvm::enumerate(entry->getArguments())) {
            Value d = UnrealizedConversionCastOp::create(ib, desc, v).getResult(0);
            Value field = LLVM::GEPOp::create(
                ib, ptr, argsType, args,
                ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
            LLVM::StoreOp::create(ib, d, field);
          }
          Value fn = func::ConstantOp::create(ib, body.getFunctionType(),
                                              SymbolRefAttr::get(body));
          Value pool = LLVM::ZeroOp::create(ib, ptr);
          Value count =
              arith::IndexCastOp::create(ib, ib.getI64Type(), tiles);
          func::CallOp::create(ib, pfor, ValueRange{pool, count, fn, args});
          scf::YieldOp::create(ib);
        },
        [&](OpBuilder &eb, Location loc) {
          ImplicitLocOpBuilder ib(loc, eb);
          SmallVector<Value> operands = {a, bm, c, zero, n};
          llvm::append_range(operands, entry->getArguments().drop_front(3));
          func::CallOp::create(ib, kernel, operands);
          scf::YieldOp::create(ib);
        });
    func::ReturnOp::create(b);
    return func;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, MatmulOperands>> products;
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<MatmulOperands> operands = matchMatmul(op))
        products.emplace_back(op, *operands);
    });
    MemRefType operand = kernelOperandType(module.getContext());
    // The module's distinct epilogues, numbered in order of appearance.
    llvm::StringMap<int> epilogueIndex;
    for (auto &[op, operands] : products) {
      // A zero fill of C right before the product (attn-group-matmul-
      // epilogues puts it there): the kernel starts from zeros instead.
      Operation *fill = op->getPrevNode();
      bool zeroInit = isZeroFillOf(fill, operands.c);
      // An epilogue the grouping pass marked, right after the product.
      std::optional<Epilogue> epilogue;
      if (auto next = dyn_cast_or_null<linalg::GenericOp>(op->getNextNode());
          next && next->hasAttr(kMatmulEpilogueAttr))
        epilogue = matchEpilogue(next, operands.c);
      int index = -1;
      if (epilogue)
        index = epilogueIndex.try_emplace(epilogue->key, epilogueIndex.size())
                    .first->second;
      func::FuncOp callee = kernel(module, operands, zeroInit,
                                   epilogue ? &*epilogue : nullptr, index);
      ImplicitLocOpBuilder b(op.getLoc(), op);
      // One cast per buffer (the output may be C or an input).
      DenseMap<Value, Value> casts;
      auto castOperand = [&](Value v) -> Value {
        Value &cast = casts[v];
        if (!cast)
          cast = memref::CastOp::create(b, operand, v);
        return cast;
      };
      SmallVector<Value> buffers = {castOperand(operands.a),
                                    castOperand(operands.b),
                                    castOperand(operands.c)};
      if (epilogue) {
        for (auto [extra, row] :
             llvm::zip(epilogue->extras, epilogue->rowVector)) {
          if (row) {
            // A row vector [N] as the matrix [1, N].
            auto type = cast<MemRefType>(extra.getType());
            extra = memref::ExpandShapeOp::create(
                b, ArrayRef<int64_t>{1, type.getDimSize(0)}, extra,
                ArrayRef<ReassociationIndices>{{0, 1}},
                ArrayRef<OpFoldResult>{
                    b.getIndexAttr(1),
                    memref::getMixedSize(b, b.getLoc(), extra, 0)});
          }
          buffers.push_back(castOperand(extra));
        }
        buffers.push_back(castOperand(epilogue->out));
      }
      if (threads) {
        func::CallOp::create(
            b, dispatcher(module, callee, operands.transposedA), buffers);
      } else {
        SmallVector<Value> args(buffers.begin(), buffers.begin() + 3);
        args.push_back(arith::ConstantIndexOp::create(b, 0));
        args.push_back(memref::DimOp::create(b, operands.c, 1));
        args.append(buffers.begin() + 3, buffers.end());
        func::CallOp::create(b, callee, args);
      }
      if (epilogue)
        epilogue->op->erase();
      op->erase();
      if (zeroInit)
        fill->erase();
    }
  }

  Option<int64_t> lanes{*this, "lanes",
                        llvm::cl::desc("f32 lanes per vector register"),
                        llvm::cl::init(16)};
  Option<int64_t> registers{*this, "registers",
                            llvm::cl::desc("vector registers"),
                            llvm::cl::init(32)};
  Option<bool> threads{
      *this, "threads",
      llvm::cl::desc("Split large products over the runtime's thread pool "
                     "(attn_parallel_for)"),
      llvm::cl::init(true)};
};

} // namespace

std::unique_ptr<Pass> createMatmulToVectorPass(VectorTarget target) {
  return std::make_unique<MatmulToVectorPass>(target);
}

void registerMatmulToVectorPass() { PassRegistration<MatmulToVectorPass>(); }

} // namespace attn
