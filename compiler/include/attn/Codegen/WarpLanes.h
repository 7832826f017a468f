//===- WarpLanes.h - Loops written for the lanes of a warp ------*- C++ -*-===//
//
// What the GPU target's loops written for a warp's lanes share, from the
// lowering that writes them (the norms' rows, products of few rows) to
// attn-gpu-warp-lanes, which gives the lane count its value: a loop's
// innermost dimension runs over `gpu.subgroup_size` lanes, and the lanes'
// values are combined by the butterfly below. Header-only: the conversion
// and code generation libraries both build such loops.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CODEGEN_WARPLANES_H
#define ATTN_CODEGEN_WARPLANES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace attn {

/// Threads that run in lockstep: a warp of an NVIDIA GPU.
inline constexpr int64_t kWarpSize = 32;

/// `value` (a float) summed over the `lanes` lanes (an index, at most
/// kWarpSize) by a butterfly of XOR shuffles: after the step of distance d
/// each lane holds the sum of its group of 2d lanes, a + b in one lane and
/// b + a in its partner, the same float, so every lane ends with the same
/// sum. A shuffle from a lane past the count is invalid and adds -0, which
/// changes no sum (one lane: the value itself).
inline mlir::Value sumOverLanes(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value value, mlir::Value lanes) {
  mlir::Value width =
      mlir::arith::IndexCastOp::create(b, loc, b.getI32Type(), lanes);
  mlir::Value negativeZero = mlir::arith::ConstantOp::create(
      b, loc, b.getFloatAttr(value.getType(), -0.0));
  for (int32_t distance = 1; distance < kWarpSize; distance *= 2) {
    mlir::Value offset =
        mlir::arith::ConstantIntOp::create(b, loc, distance, 32);
    auto shuffle = mlir::gpu::ShuffleOp::create(
        b, loc, value, offset, width, mlir::gpu::ShuffleMode::XOR);
    mlir::Value other = mlir::arith::SelectOp::create(
        b, loc, shuffle.getValid(), shuffle.getShuffleResult(), negativeZero);
    value = mlir::arith::AddFOp::create(b, loc, value, other);
  }
  return value;
}

} // namespace attn

#endif // ATTN_CODEGEN_WARPLANES_H
