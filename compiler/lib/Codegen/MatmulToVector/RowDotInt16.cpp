//===- RowDotInt16.cpp - int8 weights times a row rounded to int16 --------===//
//
// A single row of A times int8 weights (a decoding step with `attnc
// --weights int8`) on a target with AVX512-VNNI: converting each weight to
// f32 before its FMA made the step bound by instructions, not by the bytes
// it reads. Instead the row is rounded once per call to int16 with one
// scale for the row (dx = max |a| / 32767, so each element is within
// max |a| / 65534 of its value), and each 32 weights take one sign
// extension and one vpdpwssd (32 int8 x int16 products summed in pairs
// into 16 int32 lanes, exactly), then one conversion and one FMA by the
// block's scale:
//
//   C[m, n] (+)= dx * sum_blocks scale[n, b] * sum_{k in b} W[n, k] q[k]
//
// A lane sums at most 2 * scaleBlock / 32 products of 127 * 32767, far from
// int32's range and exact in f32 below 2^24 for the blocks of 32 or 64
// that attn-quantize-weights makes.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {

/// LLVM's vpdpwssd on 512-bit vectors: (acc, a, b) -> acc + pairwise a * b,
/// 32 x i16 operands into 16 x i32 lanes.
static constexpr llvm::StringLiteral kDotInt16Intrinsic =
    "llvm.x86.avx512.vpdpwssd.512";

/// The largest magnitude of an int16, which the row's largest element
/// rounds to.
static constexpr float kInt16Max = 32767.0f;

bool usesInt16Rows(const MatmulOperands &operands, const CpuCostModel &model) {
  auto type = cast<MemRefType>(operands.b.getType());
  return model.target.int16Dot && operands.scales &&
         type.getElementType().isInteger(8) &&
         operands.scaleBlock % (2 * model.target.lanes) == 0;
}

/// Row m of A ([M, K], K a multiple of the scale block) rounded to int16
/// into `rowQ` ([K] i16): q[k] = round-half-even(A[m, k] * 32767 / max |A[m,
/// :]|); returns dx = max |A[m, :]| / 32767 (0 for a zero row; NaN for a row
/// with a NaN, which then reaches C).
Value MatmulEmitter::roundRowToInt16(ImplicitLocOpBuilder &ib, Value m,
                                     Value k, Value rowQ) {
  Value step = index(ib, lanes);
  auto readA = [&](ImplicitLocOpBuilder &lb, Value kk) -> Value {
    return vector::LoadOp::create(lb, vecType, ops.a, ValueRange{m, kk});
  };
  auto maxLoop = scf::ForOp::create(
      ib, index(ib, 0), k, step, ValueRange{zeroV},
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, kb);
        Value magnitude = math::AbsFOp::create(lb, readA(lb, kk));
        scf::YieldOp::create(
            lb, ValueRange{arith::MaximumFOp::create(lb, acc[0], magnitude)});
      });
  Value amax = vector::ReductionOp::create(
      ib, vector::CombiningKind::MAXIMUMF, maxLoop.getResult(0));
  Value int16Max =
      arith::ConstantOp::create(ib, ib.getF32FloatAttr(kInt16Max));
  Value positive =
      arith::CmpFOp::create(ib, arith::CmpFPredicate::OGT, amax, zeroF);
  Value inverse = arith::SelectOp::create(
      ib, positive, arith::DivFOp::create(ib, int16Max, amax), zeroF);
  Value inverseV = vector::BroadcastOp::create(ib, vecType, inverse);
  auto int16s = VectorType::get({lanes}, ib.getI16Type());
  scf::ForOp::create(
      ib, index(ib, 0), k, step, ValueRange{},
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange) {
        ImplicitLocOpBuilder lb(loc, kb);
        Value scaled = arith::MulFOp::create(lb, readA(lb, kk), inverseV);
        Value q = arith::FPToSIOp::create(
            lb, int16s, math::RoundEvenOp::create(lb, scaled));
        vector::StoreOp::create(lb, q, rowQ, ValueRange{kk});
        scf::YieldOp::create(lb);
      });
  return arith::DivFOp::create(ib, amax, int16Max);
}

/// C[m, n] (+)= dx * (W[n, :] . q) with W int8 and its block scales, q the
/// row rounded by roundRowToInt16: `rowDotUnroll` blocks per step, each
/// into its own f32 accumulator.
void MatmulEmitter::emitRowDotInt16(ImplicitLocOpBuilder &ib, Value rowQ,
                                    Value dx, Value m, Value n, Value k) {
  int64_t block = ops.scaleBlock;
  int64_t unroll = model.rowDotUnroll;
  auto words = VectorType::get({2 * lanes}, ib.getI16Type());
  auto bytes = VectorType::get({2 * lanes}, ib.getI8Type());
  auto ints = VectorType::get({lanes}, ib.getI32Type());
  Value zeroInts = arith::ConstantOp::create(
      ib, DenseElementsAttr::get(ints, ib.getI32IntegerAttr(0)));
  StringAttr intrinsic = ib.getStringAttr(kDotInt16Intrinsic);
  // acc + scale[n, k0 / block] * (W[n, k0 .. k0 + block] . q[k0 ..]).
  auto blockDot = [&](ImplicitLocOpBuilder &lb, Value k0, Value acc) {
    Value sum = zeroInts;
    for (int64_t s = 0; s < block; s += 2 * lanes) {
      Value kk = arith::AddIOp::create(lb, k0, index(lb, s));
      Value w = arith::ExtSIOp::create(
          lb, words,
          vector::LoadOp::create(lb, bytes, ops.b, ValueRange{n, kk}));
      Value q = vector::LoadOp::create(lb, words, rowQ, ValueRange{kk});
      sum = LLVM::CallIntrinsicOp::create(lb, ints, intrinsic,
                                          ValueRange{sum, w, q})
                .getResult(0);
    }
    Value scale = memref::LoadOp::create(
        lb, ops.scales,
        ValueRange{n, arith::DivUIOp::create(lb, k0, index(lb, block))});
    return vector::FMAOp::create(
               lb, arith::SIToFPOp::create(lb, vecType, sum),
               vector::BroadcastOp::create(lb, vecType, scale), acc)
        .getResult();
  };
  Value kUnrolled = arith::SubIOp::create(
      ib, k, arith::RemUIOp::create(ib, k, index(ib, unroll * block)));
  auto unrolled = scf::ForOp::create(
      ib, index(ib, 0), kUnrolled, index(ib, unroll * block),
      SmallVector<Value>(unroll, zeroV),
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, kb);
        SmallVector<Value> next;
        for (int64_t u = 0; u < unroll; ++u)
          next.push_back(blockDot(
              lb, arith::AddIOp::create(lb, kk, index(lb, u * block)),
              acc[u]));
        scf::YieldOp::create(lb, next);
      });
  SmallVector<Value> acc(unrolled.getResults());
  auto rest = scf::ForOp::create(
      ib, kUnrolled, k, index(ib, block), ValueRange{acc[0]},
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc0) {
        ImplicitLocOpBuilder lb(loc, kb);
        scf::YieldOp::create(lb, ValueRange{blockDot(lb, kk, acc0[0])});
      });
  acc[0] = rest.getResult(0);
  storeDot(ib,
           arith::MulFOp::create(ib, sumTree(ib, acc),
                                 vector::BroadcastOp::create(ib, vecType, dx)),
           m, n);
}

} // namespace attn
