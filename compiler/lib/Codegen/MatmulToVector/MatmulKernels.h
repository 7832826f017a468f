//===- MatmulKernels.h - The kernels of attn-matmul-to-vector ---*- C++ -*-===//
//
// What the files of `attn-matmul-to-vector` share. A product becomes a call
// of a kernel function, one per module and kind (Kernels.cpp), whose body
// `MatmulEmitter` writes: the packed, register-tiled loop nest
// (PackedGemm.cpp), dot products along K for a few rows (DotKernels.cpp)
// or scaled rows of B for a few rows (AxpyKernels.cpp),
// and a fused element-wise epilogue (Epilogues.cpp). A large product calls
// its kernel through the runtime's thread pool (Dispatch.cpp). Every size
// and threshold comes from the CPU cost model.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CODEGEN_MATMULTOVECTOR_MATMULKERNELS_H
#define ATTN_CODEGEN_MATMULTOVECTOR_MATMULKERNELS_H

#include "MatmulMatch.h"
#include "attn/Codegen/CpuCostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace attn {

/// AMX's tiles (PackedGemmAmx.cpp): 16 rows of 64 bytes, 16 x 16 f32 of C
/// or 16 x 32 bf16 of A and B; a block of C is 2 x 2 tiles.
inline constexpr int64_t kAmxTileRows = 16;
inline constexpr int64_t kAmxBlock = 32;

/// An epilogue (MatmulMatch.h) inside a kernel: the matched op, whose body
/// is cloned onto vectors, and the kernel's arguments that stand for its
/// extra inputs (as matrices: [1, N] for a row vector) and its output.
struct KernelEpilogue {
  const Epilogue &match;
  llvm::SmallVector<mlir::Value> extras;
  mlir::Value out;

  mlir::Block &body() const {
    mlir::linalg::GenericOp op = match.op;
    return op.getRegion().front();
  }
};

/// Writes the body of one kernel function: C (or the epilogue's output)
/// over columns [nBegin, nEnd) from the kernel's A, B and C arguments.
class MatmulEmitter {
public:
  MatmulEmitter(mlir::ImplicitLocOpBuilder &b, const MatmulOperands &operands,
                const CpuCostModel &model, bool zeroInit,
                const KernelEpilogue *epilogue)
      : b(b), ops(operands), model(model), lanes(model.target.lanes),
        rows(model.tileRows), cols(model.tileCols),
        bf16Products(model.bf16Products), zeroInit(zeroInit),
        epilogue(epilogue) {}

  /// The product over columns [nBegin, nEnd) of C, at the builder's
  /// insertion point (the body of the kernel function).
  void emit(mlir::Value nBegin, mlir::Value nEnd);

private:
  /// `lanes` elements of W[n, k..] in f32 (B stored [N, K]), converted
  /// from a low-precision B (int8: times the block's scale unless not
  /// `scaled`); `inBounds` false masks past K (zeros).
  mlir::Value readWeights(mlir::ImplicitLocOpBuilder &ib, mlir::Value n,
                          mlir::Value k, bool inBounds, bool scaled = true);

  // DotKernels.cpp: B stored as W[N, K], few rows.
  void emitDots(mlir::Value nBegin, mlir::Value nEnd);
  bool blockwiseRowDot() const;
  mlir::Value rowDotBlock(mlir::ImplicitLocOpBuilder &ib, mlir::Value m,
                          mlir::Value n, mlir::Value k0, mlir::Value acc);
  void emitRowDot(mlir::ImplicitLocOpBuilder &ib, mlir::Value m, mlir::Value n,
                  mlir::Value k, mlir::Value kFull);
  void storeDot(mlir::ImplicitLocOpBuilder &ib, mlir::Value acc,
                mlir::Value row, mlir::Value col);
  mlir::Value sumTree(mlir::ImplicitLocOpBuilder &ib,
                      llvm::SmallVector<mlir::Value> acc);
  void emitDotTile(mlir::ImplicitLocOpBuilder &ib, mlir::Value m0, int64_t mr,
                   mlir::Value n0, int64_t nr, mlir::Value k,
                   mlir::Value kFull);

  // AxpyKernels.cpp: B stored [K, N], few rows.
  void emitAxpyRows(mlir::Value nBegin, mlir::Value nEnd);
  void emitAxpyTile(mlir::ImplicitLocOpBuilder &ib, mlir::Value m0,
                    int64_t mr, mlir::Value n0, mlir::Value k,
                    int64_t vectors, int64_t chains, bool inBounds);

  // RowDotInt16.cpp: int8 W times a single row rounded to int16
  // (vpdpwssd, AVX512-VNNI).
  mlir::Value roundRowToInt16(mlir::ImplicitLocOpBuilder &ib, mlir::Value m,
                              mlir::Value k, mlir::Value rowQ);
  void emitRowDotInt16(mlir::ImplicitLocOpBuilder &ib, mlir::Value rowQ,
                       mlir::Value dx, mlir::Value m, mlir::Value n,
                       mlir::Value k);

  // PackedGemm.cpp: the packed, register-tiled loop nest.
  void emitPacked(mlir::Value nBegin, mlir::Value nEnd);
  void emitPanel(mlir::ImplicitLocOpBuilder &ib, mlir::Value panel,
                 mlir::Value m0, mlir::Value k0, mlir::Value kc, int64_t mr);
  mlir::Value readWeightBlock(mlir::ImplicitLocOpBuilder &ib, mlir::Value row,
                              mlir::Value col);
  void emitPack(mlir::ImplicitLocOpBuilder &ib, mlir::Value packed,
                mlir::Value n0, mlir::Value k0, mlir::Value nc, mlir::Value kc,
                mlir::Value ncTiles);
  void emitTile(mlir::ImplicitLocOpBuilder &ib, mlir::Value packed,
                mlir::Value panel, mlir::Value m0, mlir::Value n0,
                mlir::Value n1, mlir::Value k0, mlir::Value kc, mlir::Value k,
                int64_t mr, int64_t nv);
  void storeBlock(mlir::ImplicitLocOpBuilder &ib, mlir::Value k0,
                  mlir::Value kc, mlir::Value k,
                  llvm::function_ref<void(mlir::ImplicitLocOpBuilder &)> storeC,
                  llvm::function_ref<void(mlir::ImplicitLocOpBuilder &)>
                      storeOut);
  mlir::scf::ForOp emitTileProducts(mlir::ImplicitLocOpBuilder &ib,
                                    mlir::Value packed, mlir::Value panel,
                                    llvm::ArrayRef<mlir::Value> rowIdx,
                                    mlir::Value n1, mlir::Value k0,
                                    mlir::Value kc, int64_t mr, int64_t nv,
                                    mlir::ValueRange acc);

  // PackedGemmBf16.cpp: the same loop nest on bf16 pairs (vdpbf16ps).
  /// A vector of f32 rounded to bf16 (to nearest even).
  mlir::Value toBf16(mlir::ImplicitLocOpBuilder &ib, mlir::Value v);
  /// The lanes of two equal 1-D vectors interleaved, x0 y0 x1 y1 ...,
  /// rounded to bf16: each 32-bit lane of the result is the pair (x_i, y_i).
  mlir::Value pairsOf(mlir::ImplicitLocOpBuilder &ib, mlir::Value x,
                      mlir::Value y);
  mlir::Value pairsIn(mlir::ImplicitLocOpBuilder &ib, mlir::Value kc);
  void emitPackBf16(mlir::ImplicitLocOpBuilder &ib, mlir::Value packed,
                    mlir::Value n0, mlir::Value k0, mlir::Value kc,
                    mlir::Value ncTiles);
  void emitPanelBf16(mlir::ImplicitLocOpBuilder &ib, mlir::Value panel,
                     mlir::Value m0, mlir::Value k0, mlir::Value kc,
                     int64_t mr);
  mlir::scf::ForOp emitTileProductsBf16(mlir::ImplicitLocOpBuilder &ib,
                                        mlir::Value packed, mlir::Value panel,
                                        mlir::Value n1, mlir::Value kc,
                                        int64_t mr, mlir::ValueRange acc);

  // PackedGemmAmx.cpp: the same loop nest on AMX tiles (tdpbf16ps).
  void emitPanelAmx(mlir::ImplicitLocOpBuilder &ib, mlir::Value panel,
                    mlir::Value m0, mlir::Value k0, mlir::Value kp);
  void emitTileAmx(mlir::ImplicitLocOpBuilder &ib, mlir::Value packed,
                   mlir::Value panel, mlir::Value block, mlir::Value m,
                   mlir::Value m0, mlir::Value n0, mlir::Value n1,
                   mlir::Value k0, mlir::Value kc, mlir::Value kp,
                   mlir::Value k);
  void emitBlockUpdate(mlir::ImplicitLocOpBuilder &ib, mlir::Value block,
                       mlir::Value m, mlir::Value m0, mlir::Value n0,
                       mlir::Value n1, mlir::Value k0, mlir::Value kc,
                       mlir::Value k);

  // Epilogues.cpp: the fused element-wise epilogue on vectors.
  llvm::SmallVector<mlir::Value> readRowVectors(mlir::ImplicitLocOpBuilder &ib,
                                                mlir::Value col);
  void storeEpilogue(mlir::ImplicitLocOpBuilder &ib, mlir::Value acc,
                     mlir::Value row, mlir::Value col,
                     llvm::ArrayRef<mlir::Value> rowVectors);
  /// The epilogue over all rows of C, columns [nBegin, nEnd), after a
  /// few-rows kernel has stored C.
  void emitEpilogueOverRows(mlir::Value nBegin, mlir::Value nEnd);

  mlir::Value index(int64_t v);
  mlir::Value index(mlir::ImplicitLocOpBuilder &ib, int64_t v);
  /// M, the rows of C.
  mlir::Value rowsOfA();
  /// ceil(v / multiple) * multiple.
  mlir::Value roundUp(mlir::ImplicitLocOpBuilder &ib, mlir::Value v,
                      int64_t multiple);

  mlir::ImplicitLocOpBuilder &b;
  MatmulOperands ops;
  const CpuCostModel &model;
  /// f32 lanes per vector, rows and columns of a register tile.
  int64_t lanes, rows, cols;
  /// The packed kernel multiplies bf16 pairs (PackedGemmBf16.cpp).
  bool bf16Products;
  bool zeroInit;
  const KernelEpilogue *epilogue;
  mlir::Type f32;
  mlir::VectorType vecType;
  mlir::Value zeroF, zeroV; // 0.0 and a vector of zeros, at the kernel's entry
};

/// scf.for from `from` to `to` by `step`, with no results, around `body`.
void forLoop(mlir::ImplicitLocOpBuilder &ib, mlir::Value from, mlir::Value to,
             mlir::Value step,
             llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value)>
                 body);

/// A vector of bf16 widened to f32 (exactly: the bits shifted into the high
/// half).
mlir::Value widenBf16(mlir::ImplicitLocOpBuilder &ib, mlir::Value v);

/// Whether a product's single rows multiply int8 W on an int16 rounding of
/// the row (RowDotInt16.cpp): int8 weights whose scale blocks are whole
/// vpdpwssd steps, on a target with AVX512-VNNI.
bool usesInt16Rows(const MatmulOperands &operands, const CpuCostModel &model);

/// The operand type every kernel takes: any 2-D buffer with unit innermost
/// stride, of f32 (or of a low-precision B's `element`).
mlir::MemRefType kernelOperandType(mlir::MLIRContext *context,
                                   mlir::Type element = nullptr);

/// The kernel function for A stored as [M, K] or [K, M] and B as [K, N]
/// or [N, K] (or a low-precision [N, K] with its scales S for int8),
/// starting from C or from zeros, with or without an epilogue: one per
/// module and kind, internal, shared by every product of that kind:
///   (A, B, C, nBegin, nEnd, [S], E1..En, Out) computes C[:, nBegin:nEnd] += A
///   * B (C = A * B with `zeroInit`), or, with an epilogue, Out[:,
///   nBegin:nEnd] = epilogue(A * B, E1..En) (C then holds partial sums
///   when K spans several blocks, and is not written otherwise).
/// `epilogueIndex` numbers the module's distinct epilogues (-1: none).
mlir::func::FuncOp getOrCreateKernel(mlir::ModuleOp module,
                                     const MatmulOperands &operands,
                                     const CpuCostModel &model, bool zeroInit,
                                     const Epilogue *epilogue,
                                     int epilogueIndex);

/// The entry of the products of `kernel`: (A, B, C, [S], E1..En, Out), the
/// kernel over all columns, split by column tiles over the context's
/// thread pool when the cost model says the product is large enough.
mlir::func::FuncOp getOrCreateDispatcher(mlir::ModuleOp module,
                                         mlir::func::FuncOp kernel,
                                         bool transposedA,
                                         const CpuCostModel &model);

} // namespace attn

#endif // ATTN_CODEGEN_MATMULTOVECTOR_MATMULKERNELS_H
