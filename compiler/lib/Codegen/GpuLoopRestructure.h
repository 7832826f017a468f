//===- GpuLoopRestructure.h - Host loops as parallel kernels ----*- C++ -*-===//
//
// Two shapes of sequential host loop that the GPU target would otherwise run
// badly, rewritten into parallel loops that attn-gpu-map-loops turns into
// kernels (used by it before it falls back to one GPU thread):
//
// - A row loop around a parallel loop, `for i { parallel j { S(i, j) } }`
//   (column reductions such as a bias's gradient, the embedding gradient's
//   scatter-add), launches one kernel per row. When iterations j never
//   touch the same memory, it is `parallel j { for i { S(i, j) } }`: one
//   kernel whose threads each walk the rows in order, so the sums keep the
//   CPU's order and no atomics are needed.
// - A full reduction into one element, `for i { acc = acc + f(x[i]) }` (a
//   gradient norm over every parameter), runs on one thread. It becomes
//   partial sums, thread p taking every P-th element (coalesced loads), and
//   one final sum of the P partial sums.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CODEGEN_GPULOOPRESTRUCTURE_H
#define ATTN_LIB_CODEGEN_GPULOOPRESTRUCTURE_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace attn {

/// `for i { ops; parallel j { S } }` as `parallel j { for i { ops; S } }`
/// when legal (`ops` write no memory, and different j write different
/// elements of memory nothing else in the loop reads); the new parallel
/// loop, which replaces `loop`.
mlir::FailureOr<mlir::scf::ParallelOp>
interchangeRowLoop(mlir::RewriterBase &rewriter, mlir::scf::ForOp loop);

/// `for i { acc[c] = acc[c] + v(i) }` (floating-point, one element) as a
/// parallel loop of partial sums followed by a sequential loop adding them
/// to acc[c]; the parallel loop. The sequential loop follows it.
mlir::FailureOr<mlir::scf::ParallelOp>
splitFullReduction(mlir::RewriterBase &rewriter, mlir::scf::ForOp loop);

} // namespace attn

#endif // ATTN_LIB_CODEGEN_GPULOOPRESTRUCTURE_H
