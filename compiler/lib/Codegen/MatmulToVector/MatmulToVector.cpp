//===- MatmulToVector.cpp - Packed, register-tiled matrix products --------===//
//
// `attn-matmul-to-vector`: C[m, n] += sum_k A[m, k] * B[k, n] on buffers
// (B may be stored transposed, as linear layers keep W[out, in]; A may be
// stored transposed, as a weight gradient dY^T X reads dY[rows, out])
// becomes a call of a kernel function (MatmulKernels.h): the packed,
// register-tiled loop nest, or for few rows dot products along K (B stored
// [N, K]) or scaled rows of B (B stored [K, N]). A zero fill of C right
// before the product and an epilogue marked by attn-group-matmul-epilogues
// right after it are folded into the kernel. This file is the pass: it
// matches the products and replaces each with its call.
//
// With AVX-512 (16 lanes, 32 registers) the register tile is 8 x 32: 16
// accumulators, 2 B vectors and a broadcast per k, 16 FMAs; with two FMA
// units (`fma-units=2`) 6 x 64 for f32, 24 FMAs. With AVX2 (8 lanes, 16
// registers) it is 6 x 16: 12 accumulators (CpuCostModel.h). M
// (B * T) is dynamic; N and K are usually static, and any of them may be
// dynamic.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"
#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNMATMULTOVECTOR
#include "attn/Codegen/Passes.h.inc"

namespace {

struct MatmulToVectorPass : impl::AttnMatmulToVectorBase<MatmulToVectorPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (precision != "f32" && precision != "bf16") {
      module.emitError() << "attn-matmul-to-vector: unknown precision '"
                         << precision << "'; expected f32 or bf16";
      return signalPassFailure();
    }
    CpuCostModel model = CpuCostModel::forTarget(
        VectorTarget{lanes, registers, int16Dot, /*amxBf16=*/false, fmaUnits},
        CacheSizes{l2Bytes}, precision == "bf16");
    if (model.bf16Products && lanes != 16) {
      module.emitError() << "attn-matmul-to-vector: bf16 products need "
                            "AVX512-BF16's 16-lane vectors, not "
                         << static_cast<int64_t>(lanes);
      return signalPassFailure();
    }
    std::optional<CpuCostModel::Bf16Kernel> kernel =
        CpuCostModel::parseBf16KernelOption(this->amx);
    if (!kernel) {
      module.emitError() << "attn-matmul-to-vector: unknown amx '" << this->amx
                         << "'; expected off, tiles or emulate";
      return signalPassFailure();
    }
    model.bf16Kernel = *kernel;
    if (int16Dot && lanes != 16) {
      module.emitError() << "attn-matmul-to-vector: int16 dot products need "
                            "AVX512-VNNI's 16-lane vectors, not "
                         << static_cast<int64_t>(lanes);
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::LinalgOp, MatmulOperands>> products;
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<MatmulOperands> operands = matchMatmul(op))
        products.emplace_back(op, *operands);
    });
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
      func::FuncOp callee =
          getOrCreateKernel(module, operands, model, zeroInit,
                            epilogue ? &*epilogue : nullptr, index);
      ImplicitLocOpBuilder b(op.getLoc(), op);
      // One cast per buffer (the output may be C or an input).
      DenseMap<Value, Value> casts;
      auto castOperand = [&](Value v) -> Value {
        Value &cached = casts[v];
        Type element = cast<MemRefType>(v.getType()).getElementType();
        if (!cached)
          cached = memref::CastOp::create(
              b, kernelOperandType(module.getContext(), element), v);
        return cached;
      };
      SmallVector<Value> buffers = {castOperand(operands.a),
                                    castOperand(operands.b),
                                    castOperand(operands.c)};
      if (operands.scales)
        buffers.push_back(castOperand(operands.scales));
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
            b,
            getOrCreateDispatcher(module, callee, operands.transposedA, model),
            buffers);
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
};

} // namespace
} // namespace attn
