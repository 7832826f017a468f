//===- PackedGemm.cpp - The packed, register-tiled product ----------------===//
//
// The loop nest that reaches OpenBLAS's speed (docs/Codegen.md):
//
//   for n0 in [0, N) step NC:
//     for k0 in [0, K) step KC:
//       pack B[k0:k0+KC, n0:n0+NC] into a 64-byte-aligned KC x NC buffer,
//         zero-padded to whole register tiles (transposing W on the way)
//       for m0 in [0, M - M % MR) step MR:  MR x NR register tile, NR = 2
//                                           or 4 vectors
//         (A stored [K, M]: pack A[k0:k0+KC, m0:m0+MR] into a KC x MR panel)
//         for n1 in [0, nc) step NR:
//           MR x NR accumulators <- C (masked past N)
//           for k in [0, kc): acc[i][j] = fma(broadcast A[m0+i, k0+k],
//                                             Bp[k, n1 + j*lanes], acc[i][j])
//           C <- accumulators (masked past N)
//         the columns left: the same with tiles of 2 vectors
//       the M % MR rows left: the same with 2-row tiles, then a 1-row tile
//
// (bf16 products on AMX replace the loops over m0 and n1 with blocks of
// 32 x 32 on AMX tiles: PackedGemmAmx.cpp.)
//
// NC, KC and the register tile MR x NR are the cost model's. The pack lives
// on the stack of the kernel's call.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {

/// The packed, register-tiled product (the file comment's loop nest).
void MatmulEmitter::emitPacked(Value nBegin, Value nEnd) {
  int64_t blockN = ops.transposedA ? model.blockNTransposedA : model.blockN;
  int64_t blockK = ops.transposedA ? model.blockKTransposedA : model.blockK;
  Value zero = index(0);
  Value m = rowsOfA();
  Value k = memref::DimOp::create(b, ops.a, ops.transposedA ? 0 : 1);
  // The pack holds one block, or less when N or K is smaller (attention's
  // products need a few KiB, not 256): on the stack of this call.
  // (AMX tiles read K 32 at a time: the pack holds zeros up to there.)
  bool amx = model.amxKernel();
  Value packRows = arith::MinSIOp::create(
      b, index(blockK), roundUp(b, k, amx ? 2 * kAmxTileRows : lanes));
  Value packCols = arith::MinSIOp::create(
      b, index(blockN),
      roundUp(b, arith::SubIOp::create(b, nEnd, nBegin), cols));
  // bf16 products pack pairs along K: half the rows, twice the columns.
  if (bf16Products) {
    packRows = arith::DivUIOp::create(b, packRows, index(2));
    packCols = arith::MulIOp::create(b, packCols, index(2));
  }
  auto packType = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                                  bf16Products ? b.getBF16Type() : f32);
  Value packed = memref::AllocaOp::create(
      b, packType, ValueRange{packRows, packCols}, b.getI64IntegerAttr(64));
  // A stored [K, M]: the rows of one register tile, a column block of A,
  // copied into a KC x MR panel so that the tile reads it contiguously;
  // bf16 products copy every A into a panel of pairs.
  Value panel, block;
  if (amx) {
    // A block of rows of A in bf16, and a block of C's products.
    panel = memref::AllocaOp::create(
        b, MemRefType::get({kAmxBlock, blockK}, b.getBF16Type()), ValueRange{},
        b.getI64IntegerAttr(64));
    block = memref::AllocaOp::create(
        b, MemRefType::get({kAmxBlock, kAmxBlock}, f32), ValueRange{},
        b.getI64IntegerAttr(64));
  } else if (bf16Products)
    panel = memref::AllocaOp::create(
        b,
        MemRefType::get(ops.transposedA ? ArrayRef<int64_t>{blockK / 2, rows}
                                        : ArrayRef<int64_t>{rows, blockK / 2},
                        b.getI32Type()),
        ValueRange{}, b.getI64IntegerAttr(64));
  else if (ops.transposedA)
    panel = memref::AllocaOp::create(b, MemRefType::get({blockK, rows}, f32),
                                     ValueRange{}, b.getI64IntegerAttr(64));
  // Rows covered by whole MR-row tiles.
  Value fullRows =
      arith::SubIOp::create(b, m, arith::RemSIOp::create(b, m, index(rows)));
  // The rows left in tiles of 2 (twice the accumulators of a single row's,
  // and half its reads of B), then at most one row.
  Value pairRows = arith::SubIOp::create(
      b, m,
      arith::RemSIOp::create(b, arith::SubIOp::create(b, m, fullRows),
                             index(2)));
  scf::ForOp::create(
      b, nBegin, nEnd, index(blockN), ValueRange{},
      [&](OpBuilder &nb, Location loc, Value n0, ValueRange) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value nc = arith::MinSIOp::create(ib, index(blockN),
                                          arith::SubIOp::create(ib, nEnd, n0));
        scf::ForOp::create(
            ib, zero, k, index(blockK), ValueRange{},
            [&](OpBuilder &kb, Location loc, Value k0, ValueRange) {
              ImplicitLocOpBuilder jb(loc, kb);
              Value kc = arith::MinSIOp::create(
                  jb, index(blockK), arith::SubIOp::create(jb, k, k0));
              // Whole register tiles of columns (the pack is zero-padded).
              Value ncTiles = roundUp(jb, nc, cols);
              Value kp = amx ? roundUp(jb, kc, 2 * kAmxTileRows) : kc;
              if (bf16Products)
                emitPackBf16(jb, packed, n0, k0, kp, ncTiles);
              else
                emitPack(jb, packed, n0, k0, nc, kc, ncTiles);
              auto rowLoop = [&](Value from, Value to, int64_t mr) {
                scf::ForOp::create(
                    jb, from, to, index(mr), ValueRange{},
                    [&](OpBuilder &mb, Location loc, Value m0, ValueRange) {
                      ImplicitLocOpBuilder ob(loc, mb);
                      if (bf16Products)
                        emitPanelBf16(ob, panel, m0, k0, kc, mr);
                      else if (panel)
                        emitPanel(ob, panel, m0, k0, kc, mr);
                      // Whole register tiles, then narrow ones to the end
                      // of the range (a multiple of splitCols, or N).
                      Value nFull = arith::SubIOp::create(
                          ob, nc, arith::RemSIOp::create(ob, nc, index(cols)));
                      auto tiles = [&](Value from, Value to, int64_t width) {
                        forLoop(ob, from, to, index(width),
                                [&](ImplicitLocOpBuilder &tib, Value n1) {
                                  emitTile(tib, packed, panel, m0, n0, n1, k0,
                                           kc, k, mr, width / lanes);
                                });
                      };
                      tiles(index(0), nFull, cols);
                      tiles(nFull, nc, model.splitCols);
                      scf::YieldOp::create(ob);
                    });
              };
              if (amx) {
                assert(cols == kAmxBlock &&
                       "AMX blocks step by the pack's column tiles");
                scf::ForOp::create(
                    jb, index(0), m, index(kAmxBlock), ValueRange{},
                    [&](OpBuilder &mb, Location loc, Value m0, ValueRange) {
                      ImplicitLocOpBuilder ob(loc, mb);
                      emitPanelAmx(ob, panel, m0, k0, kp);
                      scf::ForOp::create(
                          ob, index(0), nc, index(kAmxBlock), ValueRange{},
                          [&](OpBuilder &tb, Location loc, Value n1,
                              ValueRange) {
                            ImplicitLocOpBuilder tib(loc, tb);
                            emitTileAmx(tib, packed, panel, block, m, m0, n0,
                                        n1, k0, kc, kp, k);
                            scf::YieldOp::create(tib);
                          });
                      scf::YieldOp::create(ob);
                    });
              } else {
                rowLoop(index(0), fullRows, rows);
                rowLoop(fullRows, pairRows, 2);
                rowLoop(pairRows, m, 1);
              }
              scf::YieldOp::create(jb);
            });
        scf::YieldOp::create(ib);
      });
}

/// panel[kk, i] = A^T[k0 + kk, m0 + i] for kk < kc, i < mr: one vector
/// of mr lanes per k (all in bounds: a tile's rows are below M).
void MatmulEmitter::emitPanel(ImplicitLocOpBuilder &ib, Value panel, Value m0,
                              Value k0, Value kc, int64_t mr) {
  auto rowType = VectorType::get({mr}, f32);
  scf::ForOp::create(
      ib, index(ib, 0), kc, index(ib, 1), ValueRange{},
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
        ImplicitLocOpBuilder pb(loc, kb);
        Value row = arith::AddIOp::create(pb, k0, kk);
        Value v = vector::TransferReadOp::create(pb, rowType, ops.a,
                                                 ValueRange{row, m0}, zeroF,
                                                 ArrayRef<bool>{true});
        vector::TransferWriteOp::create(
            pb, v, panel, ValueRange{kk, index(pb, 0)}, ArrayRef<bool>{true});
        scf::YieldOp::create(pb);
      });
}

/// packed[kk, nn] = B[k0 + kk, n0 + nn] for kk < kc, nn < ncTiles, zero
/// past the edges of B.
/// lanes x lanes elements of a low-precision W[N, K] from (row, col) in
/// f32, one row at a time: rows past N repeat the last (their columns of
/// the pack are never stored, as with the f32 read's zeros); col + lanes
/// <= K, the rows being whole blocks of 32.
Value MatmulEmitter::readWeightBlock(ImplicitLocOpBuilder &ib, Value row,
                                     Value col) {
  Value lastRow = arith::SubIOp::create(ib, memref::DimOp::create(ib, ops.b, 0),
                                        index(ib, 1));
  Value block = arith::ConstantOp::create(
      ib, DenseElementsAttr::get(VectorType::get({lanes, lanes}, f32),
                                 ib.getF32FloatAttr(0)));
  for (int64_t i = 0; i < lanes; ++i) {
    Value r = arith::MinSIOp::create(
        ib, arith::AddIOp::create(ib, row, index(ib, i)), lastRow);
    block =
        vector::InsertOp::create(ib, readWeights(ib, r, col, /*inBounds=*/true),
                                 block, ArrayRef<int64_t>{i});
  }
  return block;
}

void MatmulEmitter::emitPack(ImplicitLocOpBuilder &ib, Value packed, Value n0,
                             Value k0, Value nc, Value kc, Value ncTiles) {
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
                Value block =
                    ops.lowPrecisionB()
                        ? readWeightBlock(pb, row, col)
                        : vector::TransferReadOp::create(
                              pb, blockType, ops.b, ValueRange{row, col}, zeroF,
                              ArrayRef<bool>{false, false});
                Value transposed = vector::TransposeOp::create(
                    pb, block, ArrayRef<int64_t>{1, 0});
                vector::TransferWriteOp::create(pb, transposed, packed,
                                                ValueRange{kk, nn},
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

/// One mr x nv-vector register tile at rows m0.., columns n0 + n1.., over the
/// packed k block [k0, k0 + kc) of [0, k); A's elements from `panel` when
/// A is stored [K, M]. With zeroInit the first block starts from zeros; with
/// an epilogue the last block stores epilogue(tile) into its output instead
/// of storing C.
void MatmulEmitter::emitTile(ImplicitLocOpBuilder &ib, Value packed,
                             Value panel, Value m0, Value n0, Value n1,
                             Value k0, Value kc, Value k, int64_t mr,
                             int64_t nv) {
  assert((!bf16Products || nv * lanes == cols) &&
         "bf16 tiles are the pack's two vectors of pairs");
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
    Value first =
        arith::CmpIOp::create(ib, arith::CmpIPredicate::eq, k0, index(ib, 0));
    auto init =
        scf::IfOp::create(ib, SmallVector<Type>(mr * nv, vecType), first,
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
  scf::ForOp loop =
      bf16Products
          ? emitTileProductsBf16(ib, packed, panel, n1, kc, mr, acc)
          : emitTileProducts(ib, packed, panel, rowIdx, n1, k0, kc, mr, nv,
                             acc);
  auto storeC = [&](ImplicitLocOpBuilder &sb) {
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t j = 0; j < nv; ++j)
        vector::TransferWriteOp::create(sb, loop.getResult(i * nv + j), ops.c,
                                        ValueRange{rowIdx[i], colIdx[j]},
                                        ArrayRef<bool>{false});
  };
  storeBlock(ib, k0, kc, k, storeC, [&](ImplicitLocOpBuilder &eb) {
    for (int64_t j = 0; j < nv; ++j) {
      SmallVector<Value> rowVectors = readRowVectors(eb, colIdx[j]);
      for (int64_t i = 0; i < mr; ++i)
        storeEpilogue(eb, loop.getResult(i * nv + j), rowIdx[i], colIdx[j],
                      rowVectors);
    }
  });
}

/// After the block of K [k0, k0 + kc) of [0, k): `storeC` writes C, except
/// after the last block of a kernel with an epilogue, where `storeOut`
/// writes the epilogue's output instead.
void MatmulEmitter::storeBlock(
    ImplicitLocOpBuilder &ib, Value k0, Value kc, Value k,
    llvm::function_ref<void(ImplicitLocOpBuilder &)> storeC,
    llvm::function_ref<void(ImplicitLocOpBuilder &)> storeOut) {
  if (!epilogue)
    return storeC(ib);
  Value last = arith::CmpIOp::create(ib, arith::CmpIPredicate::eq,
                                     arith::AddIOp::create(ib, k0, kc), k);
  auto branch = scf::IfOp::create(ib, last, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(ib);
  ib.setInsertionPointToStart(branch.thenBlock());
  storeOut(ib);
  ib.setInsertionPointToStart(branch.elseBlock());
  storeC(ib);
}

/// The f32 register tile's products over the packed k block: for each k,
/// acc[i][j] = fma(broadcast A[m0 + i, k0 + k], Bp[k, n1 + j * lanes]).
scf::ForOp MatmulEmitter::emitTileProducts(ImplicitLocOpBuilder &ib,
                                           Value packed, Value panel,
                                           ArrayRef<Value> rowIdx, Value n1,
                                           Value k0, Value kc, int64_t mr,
                                           int64_t nv, ValueRange acc) {
  return scf::ForOp::create(
      ib, index(ib, 0), kc, index(ib, 1), acc,
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, kb);
        SmallVector<Value> bv;
        for (int64_t j = 0; j < nv; ++j) {
          Value col =
              j ? arith::AddIOp::create(lb, n1, index(lb, j * lanes)) : n1;
          bv.push_back(
              vector::LoadOp::create(lb, vecType, packed, ValueRange{kk, col}));
        }
        Value kIdx = arith::AddIOp::create(lb, k0, kk);
        SmallVector<Value> next;
        for (int64_t i = 0; i < mr; ++i) {
          Value a = panel ? memref::LoadOp::create(lb, panel,
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
}

/// ceil(v / multiple) * multiple.
Value MatmulEmitter::roundUp(ImplicitLocOpBuilder &ib, Value v,
                             int64_t multiple) {
  Value c = index(ib, multiple);
  Value up = arith::AddIOp::create(ib, v, index(ib, multiple - 1));
  return arith::MulIOp::create(ib, arith::DivUIOp::create(ib, up, c), c);
}

} // namespace attn
