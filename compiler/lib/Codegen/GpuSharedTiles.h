//===- GpuSharedTiles.h - Tiles a block's threads share ---------*- C++ -*-===//
//
// A tiled kernel (GpuWarpTiles.h) may stage tiles of its operands in memory
// that its block's threads share (the GPU's shared memory): each thread
// copies its part of a tile, the block waits at a `gpu.barrier`, and every
// warp then reads the whole tile. In the kernel's body, before the mapping:
//
// - a shared tile is a `memref.alloca` of static shape marked
//   `kSharedTileAttr`;
// - a block copy is an `scf.for` over the tile's elements marked
//   `kBlockCopyAttr`, starting at the thread's index in the block and
//   stepping by the block's thread count;
// - a barrier after which the threads read what copies filled may name
//   the copy groups it leaves pending (`kAwaitCopiesAttr`): a kernel that
//   stages the next terms while it reads the current ones.
//
// On the GPU, attn-gpu-shared-tiles makes each marked alloca a workgroup
// attribution of its kernel, and, in a kernel with such barriers, each
// block copy of one element or vector per iteration asynchronous
// (`cp.async`, a group of its own). Under cuda-on-host, where the block's
// threads run one after the other and each must see the whole tile it
// reads, attn-gpu-loops-on-host runs each block copy whole in every
// iteration, drops the barriers and allocates each tile once, before its
// kernel's loop.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CODEGEN_GPUSHAREDTILES_H
#define ATTN_LIB_CODEGEN_GPUSHAREDTILES_H

#include "mlir/IR/Builders.h"

namespace attn {

/// The widest load of a GPU thread: a vector of 4 f32, 16 bytes (block
/// copies read such vectors where aligned; tiles are 16-byte aligned).
inline constexpr int64_t kVectorWidth = 4, kVectorBytes = 16;

/// Marks a `memref.alloca` the block's threads share.
inline constexpr llvm::StringLiteral kSharedTileAttr = "attn.shared_tile";

/// Marks an `scf.for` whose iterations the block's threads divide.
inline constexpr llvm::StringLiteral kBlockCopyAttr = "attn.block_copy";

/// On a `gpu.barrier`: the copy groups the threads may leave pending there.
inline constexpr llvm::StringLiteral kAwaitCopiesAttr = "attn.await_copies";

/// A shared tile of f32 elements: `stages` x `rows` x `columns`, or
/// `rows` x `columns` for one stage.
mlir::Value allocateSharedTile(mlir::OpBuilder &b, mlir::Location loc,
                               int64_t rows, int64_t columns,
                               int64_t stages = 1);

/// Where a block copy reads: `rows` x `columns` of `source`'s last two
/// dimensions from (`row`, `column`), at the indices `batch` of the
/// dimensions before them; `transposed`: the tile holds them transposed
/// (element (r, c) at tile[c][r]).
struct TileSource {
  mlir::Value source;
  llvm::SmallVector<mlir::Value> batch;
  mlir::Value row, column;
  int64_t rows, columns;
  bool transposed = false;
};

/// Copies `from` into the first rows and columns of `tile` (of its stage
/// `stage`, when it has several), thread `thread` of `threads` taking
/// every `threads`th element or vector of 4 (consecutive threads read
/// consecutive elements of a row). `rows` x `columns` must be a multiple
/// of 4 `threads`.
void emitBlockCopy(mlir::OpBuilder &b, mlir::Location loc,
                   const TileSource &from, mlir::Value tile,
                   mlir::Value thread, int64_t threads,
                   mlir::Value stage = {});

/// A `gpu.barrier` after which the block reads tiles that block copies
/// filled. On the GPU the copies a kernel of several stages makes are
/// asynchronous (`cp.async`), each its own group: the threads first wait
/// for all but the last `pending` groups they started (the copies of the
/// next stage, which proceed while the block reads this one).
void emitBarrierAfterCopies(mlir::OpBuilder &b, mlir::Location loc,
                            int64_t pending);

} // namespace attn

#endif // ATTN_LIB_CODEGEN_GPUSHAREDTILES_H
