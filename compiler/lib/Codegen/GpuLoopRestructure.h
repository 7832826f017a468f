//===- GpuLoopRestructure.h - Host loops as parallel kernels ----*- C++ -*-===//
//
// Shapes of loop that the GPU target would otherwise run badly, rewritten
// into parallel loops that attn-gpu-map-loops turns into kernels (the
// first two used by it before it falls back to one GPU thread):
//
// - A row loop around a parallel loop, `for i { parallel j { S(i, j) } }`
//   (column reductions such as a bias's gradient, the embedding gradient's
//   scatter-add), launches one kernel per row. When iterations j never
//   touch the same memory, it is `parallel j { for i { S(i, j) } }`: one
//   kernel whose threads each walk the rows in order, so no atomics are
//   needed (a scatter-add keeps the CPU's order; a sum may be split next).
// - A full reduction into one element, `for i { acc = acc + f(x[i]) }` (a
//   gradient norm over every parameter), runs on one thread. It becomes
//   partial sums, thread p taking every P-th element (coalesced loads), and
//   one final sum of the P partial sums.
// - A reduction over many rows into few columns (a bias's or a layer
//   norm's gradient once the row loop is inside the kernel) has a thread
//   per column walking every row: 768 threads for 8,192 rows. It is split
//   the same way, over slices of the rows for each column. A reduction
//   along long rows (a sum over the vocabulary) has a thread per row
//   reading its own row, 32 rows apart in a warp: it takes a warp's 32
//   lanes per row instead.
// - A fill (`parallel j { acc[j] = 0 }`) is a kernel of its own before the
//   reduction that starts from it, and an element-wise loop a kernel of
//   its own after the loop whose result it reads: fills move into the
//   reductions, and adjacent loops over the same columns join.
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

/// Moves each fill of `block` (`parallel j { buffer[j] = x }`, what
/// linalg.fill becomes, or `buffer[j, 0]` of a [rows, 1] buffer) down to right before the next op that touches its
/// buffer (an arena slot counting as a buffer of its own), past ops that
/// touch other memory only, so that absorbInitialFills finds it right
/// before the reduction that starts from it. A copy of every element of a
/// buffer just filled (bufferisation copies a fill two reductions start
/// from) becomes a fill of its target.
void sinkFills(mlir::Block &block);

/// `fill: parallel j { acc[j] = x }` right before `par: parallel j { ...;
/// for i { acc[j] = acc[j] + v(i, j) } }` over the same columns (sums,
/// maxima or minima, as splitColumnReduction takes them; only
/// side-effect-free ops between the two and before the row loop), as
/// `par: parallel j { ...; acc[j] = x; for i { ... } }`: the thread that
/// accumulates an element starts it, and the fill is one kernel fewer. Each
/// of par's accumulators may absorb its own fill. Whether any did.
bool absorbInitialFills(mlir::RewriterBase &rewriter, mlir::scf::ParallelOp par);

/// Adjacent parallel loops of `block` over the same columns as one kernel,
/// `parallel j { A(j) }; parallel j { B(j) }` as `parallel j { A(j); B(j)
/// }`, where no element of memory is touched by one loop's iteration j and
/// another's iteration j' != j: memory both touch (one writing it) is
/// touched through one buffer at [j] only ([j, 0] and the like: the loop's
/// induction variables in order, constants between them). (A reduction's
/// combining loop and the element-wise op on its result; element-wise
/// chains.) A loop right after a branch moves into both of its ways where
/// it joins the last loop of one of them, or of a way of a branch there (a
/// product's bias after its branches on the rows). A loop written for a
/// warp's lanes (WarpLanes.h: its last dimension the lanes, its body
/// shuffling) counts its other dimensions as its columns; a loop after it
/// joins it in lane 0, when the memory both touch is touched by the warp
/// loop in lane 0 only (a product of few rows and its bias). Loops with
/// named processors (tiled kernels) are left alone.
void fuseSameColumnLoops(mlir::Block &block);

/// A reduction split in two parallel loops: partial results over slices of
/// its rows, then the accumulator combined with them.
struct SplitReduction {
  mlir::scf::ParallelOp partials, totals;
};

/// `for i { acc[c] = acc[c] + v(i) }` (floating-point, one element; a
/// maximum or minimum as well, and a perfect nest of row loops) as 4,096
/// threads' partial results, thread p taking iterations p, p + 4096, ...,
/// and acc[c] combined with them in order. Replaces `loop`.
mlir::FailureOr<SplitReduction> splitFullReduction(mlir::RewriterBase &rewriter,
                                                   mlir::scf::ForOp loop);

/// `parallel j { for i { acc[c(j)] = acc[c(j)] + v(i, j) } }` (sums,
/// maxima or minima; a nest of row loops; several accumulators in one
/// loop, each into its own allocation) the same way, when it pays:
/// - few static columns j (a bias's gradient: 768 columns, each thread
///   walking 8,192 rows): P[s, j] over S interleaved slices of the
///   innermost row loop, S such that S times the columns is about 65,536
///   threads (at most 256 slices, each at least 4 rows where the rows are
///   static);
/// - otherwise, long static rows of their own (at least 256 elements, read
///   along their contiguous dimension and by no other column: a row's sum
///   over a vocabulary, not a matrix product): P[j, s] over a warp's 32
///   lanes, so that a warp reads consecutive elements;
/// then acc[c(j)] combined with P's slices in order (from the value
/// absorbInitialFills stored before the row loop, if it did). Deterministic,
/// in another order than the CPU's. Replaces `par`.
mlir::FailureOr<SplitReduction>
splitColumnReduction(mlir::RewriterBase &rewriter, mlir::scf::ParallelOp par);

} // namespace attn

#endif // ATTN_LIB_CODEGEN_GPULOOPRESTRUCTURE_H
