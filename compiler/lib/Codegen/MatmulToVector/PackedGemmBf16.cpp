//===- PackedGemmBf16.cpp - The packed product on bf16 pairs --------------===//
//
// `attnc --precision bf16` on a CPU with AVX512-BF16: PackedGemm.cpp's loop
// nest with both operands rounded to bf16 (to nearest even) as they are
// packed, and the products accumulated in f32 by vdpbf16ps, which
// multiplies the two bf16 elements of each 32-bit lane of its operands and
// adds both products to the lane's f32 accumulator:
//
//   Bp[p, 2n + e]  = bf16(B[k0 + 2p + e, n0 + n])       e = 0, 1; 0 past K
//   panel[i, p]    = bf16(A[m0 + i, k0 + 2p + e]), e = 0, 1, as one i32
//                    ([p, i] for A stored [K, M], whose pairs are columns)
//   acc[i][j]      = dpbf16ps(acc[i][j], broadcast panel[p, i],
//                             Bp[p, 2 (n1 + j lanes) ...])
//
// One instruction does twice the multiply-adds of an f32 FMA. The rows of
// A are always copied into a panel (of pairs), since a pair of A must be
// rounded and broadcast as one 32-bit value; each panel serves the column
// block's register tiles, as the f32 kernel's [K, M] panel does.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {

/// LLVM's vdpbf16ps on 512-bit vectors: (acc, a, b) -> acc + pairwise a * b.
static constexpr llvm::StringLiteral kDotBf16Intrinsic =
    "llvm.x86.avx512bf16.dpbf16ps.512";

/// A vector of i32 with `value` in every lane, shaped as `like`.
static Value splatI32(ImplicitLocOpBuilder &ib, Value like, int32_t value) {
  auto type = cast<VectorType>(like.getType()).clone(ib.getI32Type());
  return arith::ConstantOp::create(
      ib, DenseElementsAttr::get(type, ib.getI32IntegerAttr(value)));
}

Value MatmulEmitter::toBf16(ImplicitLocOpBuilder &ib, Value v) {
  auto type = cast<VectorType>(v.getType());
  if (model.bf16Kernel != CpuCostModel::Bf16Kernel::EmulatedAmxTiles)
    return arith::TruncFOp::create(ib, type.clone(ib.getBF16Type()), v);
  // The emulated AMX kernel runs on any AVX-512 CPU, where LLVM would call
  // a library function per element: round the bits (add 0x7fff and the
  // lowest kept bit, keep the top half; NaNs stay quiet NaNs).
  Value bits = arith::BitcastOp::create(ib, type.clone(ib.getI32Type()), v);
  Value kept = arith::AndIOp::create(
      ib, arith::ShRUIOp::create(ib, bits, splatI32(ib, v, 16)),
      splatI32(ib, v, 1));
  Value rounded = arith::AddIOp::create(
      ib, arith::AddIOp::create(ib, bits, splatI32(ib, v, 0x7fff)), kept);
  Value nan = arith::CmpFOp::create(ib, arith::CmpFPredicate::UNO, v, v);
  Value quiet = arith::OrIOp::create(ib, bits, splatI32(ib, v, 0x400000));
  Value top = arith::ShRUIOp::create(
      ib, arith::SelectOp::create(ib, nan, quiet, rounded),
      splatI32(ib, v, 16));
  Value half = arith::TruncIOp::create(ib, type.clone(ib.getI16Type()), top);
  return arith::BitcastOp::create(ib, type.clone(ib.getBF16Type()), half);
}

Value widenBf16(ImplicitLocOpBuilder &ib, Value v) {
  // bf16 is the high half of an f32: widen the bits (without AVX512-BF16,
  // LLVM has no vector instructions for bf16 and calls a library function
  // per element).
  auto type = cast<VectorType>(v.getType());
  Value wide = arith::ExtUIOp::create(
      ib, type.clone(ib.getI32Type()),
      arith::BitcastOp::create(ib, type.clone(ib.getI16Type()), v));
  Value shifted = arith::ShLIOp::create(ib, wide, splatI32(ib, wide, 16));
  return arith::BitcastOp::create(ib, type.clone(ib.getF32Type()), shifted);
}

Value MatmulEmitter::pairsOf(ImplicitLocOpBuilder &ib, Value x, Value y) {
  int64_t n = cast<VectorType>(x.getType()).getNumElements();
  SmallVector<int64_t> mask;
  for (int64_t i = 0; i < n; ++i)
    mask.append({i, n + i});
  return toBf16(ib, vector::ShuffleOp::create(ib, x, y, mask));
}

/// ceil(kc / 2): the pairs of a k block.
Value MatmulEmitter::pairsIn(ImplicitLocOpBuilder &ib, Value kc) {
  return arith::DivUIOp::create(ib, arith::AddIOp::create(ib, kc, index(ib, 1)),
                                index(ib, 2));
}

void MatmulEmitter::emitPackBf16(ImplicitLocOpBuilder &ib, Value packed,
                                 Value n0, Value k0, Value kc, Value ncTiles) {
  // Steps of `kStep` along the block's k, of lanes columns, each storing
  // rows [p0, p0 + pairs) of the pack from `body`'s vectors of pairs.
  auto forEach = [&](int64_t kStep, Value to, auto body) {
    scf::ForOp::create(
        ib, index(ib, 0), to, index(ib, kStep), ValueRange{},
        [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
          ImplicitLocOpBuilder jb(loc, kb);
          scf::ForOp::create(
              jb, index(jb, 0), ncTiles, index(jb, lanes), ValueRange{},
              [&](OpBuilder &nb, Location loc, Value nn, ValueRange) {
                ImplicitLocOpBuilder pb(loc, nb);
                SmallVector<Value> rows = body(pb, kk, nn);
                Value p0 = arith::DivUIOp::create(pb, kk, index(pb, 2));
                Value c0 = arith::MulIOp::create(pb, nn, index(pb, 2));
                for (auto [i, row] : llvm::enumerate(rows))
                  vector::StoreOp::create(
                      pb, row, packed,
                      ValueRange{arith::AddIOp::create(pb, p0, index(pb, i)),
                                 c0});
                scf::YieldOp::create(pb);
              });
          scf::YieldOp::create(jb);
        });
  };
  if (ops.transposedB) {
    // W[N, K]: a lanes x lanes block (rows n, columns k), transposed in
    // registers as the f32 pack does, then its rows k paired.
    auto blockType = VectorType::get({lanes, lanes}, f32);
    forEach(lanes, kc, [&](ImplicitLocOpBuilder &pb, Value kk, Value nn) {
      Value row = arith::AddIOp::create(pb, n0, nn);
      Value col = arith::AddIOp::create(pb, k0, kk);
      Value block = ops.lowPrecisionB()
                        ? readWeightBlock(pb, row, col)
                        : vector::TransferReadOp::create(
                              pb, blockType, ops.b, ValueRange{row, col}, zeroF,
                              ArrayRef<bool>{false, false});
      Value byK =
          vector::TransposeOp::create(pb, block, ArrayRef<int64_t>{1, 0});
      SmallVector<Value> rows;
      for (int64_t i = 0; i < lanes; i += 2)
        rows.push_back(pairsOf(
            pb, vector::ExtractOp::create(pb, byK, ArrayRef<int64_t>{i}),
            vector::ExtractOp::create(pb, byK, ArrayRef<int64_t>{i + 1})));
      return rows;
    });
    return;
  }
  // B[K, N]: rows 2p and 2p + 1 (zeros past K), paired.
  forEach(2, kc, [&](ImplicitLocOpBuilder &pb, Value kk, Value nn) {
    Value two = vector::TransferReadOp::create(
        pb, VectorType::get({2, lanes}, f32), ops.b,
        ValueRange{arith::AddIOp::create(pb, k0, kk),
                   arith::AddIOp::create(pb, n0, nn)},
        zeroF, ArrayRef<bool>{false, false});
    return SmallVector<Value>{
        pairsOf(pb, vector::ExtractOp::create(pb, two, ArrayRef<int64_t>{0}),
                vector::ExtractOp::create(pb, two, ArrayRef<int64_t>{1}))};
  });
}

void MatmulEmitter::emitPanelBf16(ImplicitLocOpBuilder &ib, Value panel,
                                  Value m0, Value k0, Value kc, int64_t mr) {
  Type i32 = ib.getI32Type();
  if (ops.transposedA) {
    // A[K, M]: rows k and k + 1 of the tile's columns, paired: panel row p.
    scf::ForOp::create(
        ib, index(ib, 0), pairsIn(ib, kc), index(ib, 1), ValueRange{},
        [&](OpBuilder &kb, Location loc, Value p, ValueRange) {
          ImplicitLocOpBuilder pb(loc, kb);
          Value row = arith::AddIOp::create(
              pb, k0, arith::MulIOp::create(pb, p, index(pb, 2)));
          Value two = vector::TransferReadOp::create(
              pb, VectorType::get({2, mr}, f32), ops.a, ValueRange{row, m0},
              zeroF, ArrayRef<bool>{false, true});
          Value pairs = vector::BitCastOp::create(
              pb, VectorType::get({mr}, i32),
              pairsOf(
                  pb, vector::ExtractOp::create(pb, two, ArrayRef<int64_t>{0}),
                  vector::ExtractOp::create(pb, two, ArrayRef<int64_t>{1})));
          vector::StoreOp::create(pb, pairs, panel,
                                  ValueRange{p, index(pb, 0)});
          scf::YieldOp::create(pb);
        });
    return;
  }
  // A[M, K]: each row's elements are already its pairs: panel row i.
  scf::ForOp::create(
      ib, index(ib, 0), kc, index(ib, lanes), ValueRange{},
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
        ImplicitLocOpBuilder pb(loc, kb);
        Value col = arith::AddIOp::create(pb, k0, kk);
        Value p0 = arith::DivUIOp::create(pb, kk, index(pb, 2));
        for (int64_t i = 0; i < mr; ++i) {
          Value row = i ? arith::AddIOp::create(pb, m0, index(pb, i)) : m0;
          Value v = vector::TransferReadOp::create(pb, vecType, ops.a,
                                                   ValueRange{row, col}, zeroF,
                                                   ArrayRef<bool>{false});
          Value pairs = vector::BitCastOp::create(
              pb, VectorType::get({lanes / 2}, i32), toBf16(pb, v));
          vector::StoreOp::create(pb, pairs, panel,
                                  ValueRange{index(pb, i), p0});
        }
        scf::YieldOp::create(pb);
      });
}

scf::ForOp MatmulEmitter::emitTileProductsBf16(ImplicitLocOpBuilder &ib,
                                               Value packed, Value panel,
                                               Value n1, Value kc, int64_t mr,
                                               ValueRange acc) {
  int64_t nv = cols / lanes;
  auto pairType = VectorType::get({2 * lanes}, ib.getBF16Type());
  auto wordType = VectorType::get({lanes}, ib.getI32Type());
  StringAttr intrinsic = ib.getStringAttr(kDotBf16Intrinsic);
  return scf::ForOp::create(
      ib, index(ib, 0), pairsIn(ib, kc), index(ib, 1), acc,
      [&](OpBuilder &kb, Location loc, Value p, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, kb);
        SmallVector<Value> bv;
        for (int64_t j = 0; j < nv; ++j) {
          Value col = arith::MulIOp::create(
              lb, j ? arith::AddIOp::create(lb, n1, index(lb, j * lanes)) : n1,
              index(lb, 2));
          bv.push_back(
              vector::LoadOp::create(lb, pairType, packed, ValueRange{p, col}));
        }
        SmallVector<Value> next;
        for (int64_t i = 0; i < mr; ++i) {
          SmallVector<Value, 2> at = {index(lb, i), p};
          if (ops.transposedA)
            std::swap(at[0], at[1]);
          Value a = memref::LoadOp::create(lb, panel, at);
          Value av = vector::BitCastOp::create(
              lb, pairType, vector::BroadcastOp::create(lb, wordType, a));
          for (int64_t j = 0; j < nv; ++j)
            next.push_back(LLVM::CallIntrinsicOp::create(
                               lb, vecType, intrinsic,
                               ValueRange{state[i * nv + j], av, bv[j]})
                               .getResult(0));
        }
        scf::YieldOp::create(lb, next);
      });
}

} // namespace attn
