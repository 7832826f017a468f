//===- PackedGemmAmx.cpp - The packed bf16 product on AMX tiles -----------===//
//
// `attnc --precision bf16` on a CPU with AMX-BF16: PackedGemm.cpp's blocks
// of B, packed in bf16 pairs along K as PackedGemmBf16.cpp packs them
// (the layout in which tdpbf16ps reads its B tile), and blocks of 32 x 32
// of C computed on four 16 x 16 f32 tiles:
//
//   kp = kc rounded up to 32 (the pack and the panel hold zeros past K)
//   for m0 in [0, M) step 32:
//     panel[i, kk] = bf16(A[m0 + i, k0 + kk])   i < 32, kk < kp; 0 past M
//     for n1 in [0, nc) step 32:
//       acc[i][j] = 0                                          i, j in {0, 1}
//       for s in [0, kp / 32):
//         a[i] = tile of panel[16 i + (0..16), 32 s + (0..32)]
//         b[j] = tile of Bp[16 s + (0..16), 2 (n1 + 16 j) + (0..32)]
//         acc[i][j] = tdpbf16ps(acc[i][j], a[i], b[j])
//       block[16 i.., 16 j..] = acc[i][j]
//       C[m0 + r, n0 + n1..] (+)= block[r, ..] for the rows r below M, or the
//         epilogue of it after the last block of K
//
// Four accumulators and two tiles each of A and B fill AMX's eight tile
// registers. C goes through a block on the stack instead of being loaded
// into tiles, so that the edges of M and N (masked vector reads and
// writes) and the epilogue stay the vector code of the other kernels.
//
// `EmulatedAmxTiles` builds the same loop nest with each tile a 2-D vector
// and each tile instruction the vector instructions that compute it (f32
// FMAs for tdpbf16ps: TileOps below), which checks the kernel on any
// AVX-512 CPU.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {

namespace {

/// The tile instructions the kernel uses, as AMX ops, or emulated: a tile
/// is then a 2-D vector and tdpbf16ps 512 FMAs.
class TileOps {
public:
  TileOps(ImplicitLocOpBuilder &b, bool emulated)
      : b(b), emulated(emulated), f32(b.getF32Type()), bf16(b.getBF16Type()) {
  }

  /// A tile of C (16 x 16 f32) and of A or B (16 x 32 bf16).
  Type accType() { return type({kAmxTileRows, kAmxTileRows}, f32); }
  Type operandType() { return type({kAmxTileRows, 2 * kAmxTileRows}, bf16); }

  Value zero() {
    if (!emulated)
      return amx::TileZeroOp::create(b, accType());
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(cast<VectorType>(accType()),
                                  b.getF32FloatAttr(0)));
  }

  /// The tile of `memref` whose first element is at (row, col).
  Value load(Type tileType, Value memref, Value row, Value col) {
    if (!emulated)
      return amx::TileLoadOp::create(b, tileType, memref,
                                     ValueRange{row, col});
    Type element = cast<VectorType>(tileType).getElementType();
    Value padding = arith::ConstantOp::create(b, b.getZeroAttr(element));
    return vector::TransferReadOp::create(
        b, cast<VectorType>(tileType), memref, ValueRange{row, col}, padding,
        ArrayRef<bool>{true, true});
  }

  void store(Value tile, Value memref, Value row, Value col) {
    if (!emulated) {
      amx::TileStoreOp::create(b, memref, ValueRange{row, col}, tile);
      return;
    }
    vector::TransferWriteOp::create(b, tile, memref, ValueRange{row, col},
                                    ArrayRef<bool>{true, true});
  }

  /// acc + a * b on pairs: acc[i][n] += a[i][2p] b[p][2n] +
  /// a[i][2p + 1] b[p][2n + 1], summed over the 16 pairs p (emulated: in
  /// f32 FMAs, which any AVX-512 CPU has; the products of bf16 values are
  /// exact in f32, so only the order of the additions differs from AMX).
  Value multiply(Value a, Value bTile, Value acc) {
    if (!emulated)
      return amx::TileMulFOp::create(b, accType(), a, bTile, acc);
    constexpr int64_t n = kAmxTileRows;
    SmallVector<int64_t> even, odd;
    for (int64_t j = 0; j < n; ++j) {
      even.push_back(2 * j);
      odd.push_back(2 * j + 1);
    }
    // Row p of B as its columns' first and second elements of pair p.
    SmallVector<Value> firsts, seconds;
    for (int64_t p = 0; p < n; ++p) {
      Value pairs = vector::ExtractOp::create(b, bTile, ArrayRef<int64_t>{p});
      Value row = widenBf16(b, pairs);
      firsts.push_back(vector::ShuffleOp::create(b, row, row, even));
      seconds.push_back(vector::ShuffleOp::create(b, row, row, odd));
    }
    auto rowType = VectorType::get({n}, f32);
    Value result = acc;
    for (int64_t i = 0; i < n; ++i) {
      Value sum = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{i});
      Value pairs = vector::ExtractOp::create(b, a, ArrayRef<int64_t>{i});
      Value rowOfA = widenBf16(b, pairs);
      for (int64_t p = 0; p < n; ++p) {
        Value columns[2] = {firsts[p], seconds[p]};
        for (int64_t e = 0; e < 2; ++e) {
          Value element = vector::ExtractOp::create(
              b, rowOfA, ArrayRef<int64_t>{2 * p + e});
          sum = vector::FMAOp::create(
              b, vector::BroadcastOp::create(b, rowType, element), columns[e],
              sum);
        }
      }
      result = vector::InsertOp::create(b, sum, result, ArrayRef<int64_t>{i});
    }
    return result;
  }

private:
  Type type(ArrayRef<int64_t> shape, Type element) {
    if (emulated)
      return VectorType::get(shape, element);
    return amx::TileType::get(shape, element);
  }

  ImplicitLocOpBuilder &b;
  bool emulated;
  Type f32, bf16;
};

} // namespace

void MatmulEmitter::emitPanelAmx(ImplicitLocOpBuilder &ib, Value panel,
                                 Value m0, Value k0, Value kp) {
  // Blocks of lanes x lanes of A, read as [rows, k] (transposed when A is
  // stored [K, M]), zeros past M and K.
  auto blockType = VectorType::get({lanes, lanes}, f32);
  for (int64_t i0 = 0; i0 < kAmxBlock; i0 += lanes) {
    scf::ForOp::create(
        ib, index(ib, 0), kp, index(ib, lanes), ValueRange{},
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
          ImplicitLocOpBuilder pb(loc, kb);
          Value row = arith::AddIOp::create(pb, m0, index(pb, i0));
          Value col = arith::AddIOp::create(pb, k0, kk);
          SmallVector<Value, 2> at = {row, col};
          if (ops.transposedA)
            std::swap(at[0], at[1]);
          Value block = vector::TransferReadOp::create(
              pb, blockType, ops.a, at, zeroF, ArrayRef<bool>{false, false});
          if (ops.transposedA)
            block =
                vector::TransposeOp::create(pb, block, ArrayRef<int64_t>{1, 0});
          for (int64_t i = 0; i < lanes; ++i) {
            Value v = vector::ExtractOp::create(pb, block, ArrayRef<int64_t>{i});
            vector::StoreOp::create(pb, toBf16(pb, v), panel,
                                    ValueRange{index(pb, i0 + i), kk});
          }
          scf::YieldOp::create(pb);
        });
  }
}

void MatmulEmitter::emitTileAmx(ImplicitLocOpBuilder &ib, Value packed,
                                Value panel, Value block, Value m, Value m0,
                                Value n0, Value n1, Value k0, Value kc,
                                Value kp, Value k) {
  bool emulated =
      model.bf16Kernel == CpuCostModel::Bf16Kernel::EmulatedAmxTiles;
  constexpr int64_t perBlock = kAmxBlock / kAmxTileRows;
  TileOps tiles(ib, emulated);
  SmallVector<Value> zeros;
  for (int64_t t = 0; t < perBlock * perBlock; ++t)
    zeros.push_back(tiles.zero()); // one tile register each
  Value steps = arith::DivUIOp::create(ib, kp, index(ib, 2 * kAmxTileRows));
  auto loop = scf::ForOp::create(
      ib, index(ib, 0), steps, index(ib, 1), zeros,
      [&](OpBuilder &sb, Location loc, Value s, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, sb);
        TileOps step(lb, emulated);
        Value pairRow = arith::MulIOp::create(lb, s, index(lb, kAmxTileRows));
        Value col = arith::MulIOp::create(lb, pairRow, index(lb, 2));
        SmallVector<Value> a, b;
        for (int64_t t = 0; t < perBlock; ++t) {
          a.push_back(step.load(step.operandType(), panel,
                                index(lb, t * kAmxTileRows), col));
          // Columns n1 + 16 t.. of B: pairs, so twice as many elements.
          Value bCol = arith::MulIOp::create(
              lb, arith::AddIOp::create(lb, n1, index(lb, t * kAmxTileRows)),
              index(lb, 2));
          b.push_back(step.load(step.operandType(), packed, pairRow, bCol));
        }
        SmallVector<Value> next;
        for (int64_t i = 0; i < perBlock; ++i)
          for (int64_t j = 0; j < perBlock; ++j)
            next.push_back(step.multiply(a[i], b[j], acc[i * perBlock + j]));
        scf::YieldOp::create(lb, next);
      });
  for (int64_t i = 0; i < perBlock; ++i)
    for (int64_t j = 0; j < perBlock; ++j)
      tiles.store(loop.getResult(i * perBlock + j), block,
                  index(ib, i * kAmxTileRows), index(ib, j * kAmxTileRows));
  emitBlockUpdate(ib, block, m, m0, n0, n1, k0, kc, k);
}

/// C[m0 + r, n0 + n1..] from the block of products, for the rows below M:
/// added to C's value, except in the first block of K of a kernel that
/// starts from zeros; through the epilogue after the last block of K.
void MatmulEmitter::emitBlockUpdate(ImplicitLocOpBuilder &ib, Value block,
                                    Value m, Value m0, Value n0, Value n1,
                                    Value k0, Value kc, Value k) {
  int64_t nv = kAmxBlock / lanes;
  Value rowsLeft = arith::MinSIOp::create(ib, index(ib, kAmxBlock),
                                          arith::SubIOp::create(ib, m, m0));
  Value fromZeros =
      zeroInit ? arith::CmpIOp::create(ib, arith::CmpIPredicate::eq, k0,
                                       index(ib, 0))
                     .getResult()
               : arith::ConstantOp::create(ib, ib.getBoolAttr(false))
                     .getResult();
  Value nBase = arith::AddIOp::create(ib, n0, n1);
  SmallVector<Value> cols;
  for (int64_t j = 0; j < nv; ++j)
    cols.push_back(arith::AddIOp::create(ib, nBase, index(ib, j * lanes)));
  // One row's vectors: the products, plus C's value where it counts.
  auto sums = [&](ImplicitLocOpBuilder &rb, Value r, Value row) {
    auto start = scf::IfOp::create(rb, SmallVector<Type>(nv, vecType),
                                   fromZeros, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(rb);
    rb.setInsertionPointToStart(start.thenBlock());
    scf::YieldOp::create(rb, SmallVector<Value>(nv, zeroV));
    rb.setInsertionPointToStart(start.elseBlock());
    SmallVector<Value> c;
    for (int64_t j = 0; j < nv; ++j)
      c.push_back(vector::TransferReadOp::create(rb, vecType, ops.c,
                                                 ValueRange{row, cols[j]},
                                                 zeroF, ArrayRef<bool>{false}));
    scf::YieldOp::create(rb, c);
    rb.setInsertionPointAfter(start);
    SmallVector<Value> result;
    for (int64_t j = 0; j < nv; ++j)
      result.push_back(arith::AddFOp::create(
          rb, start.getResult(j),
          vector::LoadOp::create(rb, vecType, block,
                                 ValueRange{r, index(rb, j * lanes)})));
    return result;
  };
  auto forEachRow = [&](ImplicitLocOpBuilder &fb, auto body) {
    scf::ForOp::create(
        fb, index(fb, 0), rowsLeft, index(fb, 1), ValueRange{},
        [&](OpBuilder &rb, Location loc, Value r, ValueRange) {
          ImplicitLocOpBuilder bb(loc, rb);
          body(bb, r, arith::AddIOp::create(bb, m0, r));
          scf::YieldOp::create(bb);
        });
  };
  auto storeC = [&](ImplicitLocOpBuilder &sb) {
    forEachRow(sb, [&](ImplicitLocOpBuilder &rb, Value r, Value row) {
      for (auto [j, v] : llvm::enumerate(sums(rb, r, row)))
        vector::TransferWriteOp::create(rb, v, ops.c, ValueRange{row, cols[j]},
                                        ArrayRef<bool>{false});
    });
  };
  storeBlock(ib, k0, kc, k, storeC, [&](ImplicitLocOpBuilder &eb) {
    SmallVector<SmallVector<Value>> rowVectors;
    for (int64_t j = 0; j < nv; ++j)
      rowVectors.push_back(readRowVectors(eb, cols[j]));
    forEachRow(eb, [&](ImplicitLocOpBuilder &rb, Value r, Value row) {
      for (auto [j, v] : llvm::enumerate(sums(rb, r, row)))
        storeEpilogue(rb, v, row, cols[j], rowVectors[j]);
    });
  });
}

} // namespace attn
