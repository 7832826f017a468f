//===- QuantizeWeights.cpp - Products read low-precision weights ----------===//
//
// `attn-quantize-weights`: the matrix products of a model built with
// `attnc --weights bf16|int8` read their weights from the copy the runtime
// keeps in that format (abi.h, attn_weight_format) through
// `attn.dequantize`, which the lowering folds into the product's loads: a
// decoding step, which reads every weight once per token, then reads half
// or a quarter of the bytes. A parameter read any other way too (a tied
// embedding's gather) keeps those reads in f32.
//
//===----------------------------------------------------------------------===//

#include "attn/EntryPoints/LowPrecisionWeights.h"
#include "attn/EntryPoints/Passes.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNQUANTIZEWEIGHTS
#include "attn/EntryPoints/Passes.h.inc"

namespace {

struct AttnQuantizeWeightsPass
    : impl::AttnQuantizeWeightsBase<AttnQuantizeWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<WeightFormat> parsed = parseWeightFormat(format);
    if (!parsed || block <= 0) {
      module.emitError() << "attn-quantize-weights: format '" << format
                         << "' or block " << static_cast<int64_t>(block)
                         << " is not one of f32, bf16, int8 with a positive "
                            "block";
      return signalPassFailure();
    }
    if (*parsed == WeightFormat::f32)
      return;
    Builder b(module.getContext());
    module->setAttr(kWeightFormatAttr, b.getStringAttr(format));
    module->setAttr(kWeightBlockAttr,
                    b.getI64IntegerAttr(*parsed == WeightFormat::int8 ? block
                                                                      : 0));
    SymbolTable symbols(module);
    SmallVector<MatmulOp> matmuls;
    module.walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp op : matmuls)
      linearOfTransposedParam(op);
    module.walk([&](LinearOp op) { readLowPrecision(op, symbols, *parsed); });
  }

  /// `matmul(x, transpose(W))` of a parameter W [N, K] as `linear(x, W)`,
  /// the form whose weight the products read low-precision.
  static void linearOfTransposedParam(MatmulOp op) {
    auto transpose = op.getRhs().getDefiningOp<TransposeOp>();
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    if (!transpose || lhsType.getRank() < 2 ||
        transpose.getPermutation() != ArrayRef<int64_t>{1, 0} ||
        !transpose.getInput().getDefiningOp<GetParamOp>())
      return;
    OpBuilder b(op);
    auto linear = LinearOp::create(b, op.getLoc(), op.getType(), op.getLhs(),
                                   transpose.getInput(), Value(), Value(),
                                   Activation::none);
    op.replaceAllUsesWith(linear.getResult());
    op.erase();
    if (transpose->use_empty())
      transpose.erase();
  }

  /// The weight of `op`, a parameter's f32 value [N, K], read through its
  /// low-precision copy when its rows are whole blocks (for int8, of its
  /// scales; for bf16 too, so that the kernels' vectors never run past K).
  void readLowPrecision(LinearOp op, SymbolTable &symbols,
                        WeightFormat weights) {
    auto get = op.getWeight().getDefiningOp<GetParamOp>();
    if (!get || get.getBuffer() != ParamBuffer::value)
      return;
    auto type = cast<RankedTensorType>(get.getType());
    if (type.getRank() != 2 || !type.hasStaticShape() ||
        !type.getElementType().isF32() || type.getDimSize(1) % block)
      return;
    auto param = symbols.lookup<ParamOp>(get.getName());
    OpBuilder b(op);
    b.setInsertionPointAfter(get);
    Location loc = get.getLoc();
    Type element = weightElementType(b.getContext(), weights);
    Value values = GetParamOp::create(
        b, loc, RankedTensorType::get(type.getShape(), element), get.getName(),
        ParamBuffer::weights);
    Value scales;
    if (weights == WeightFormat::int8)
      scales = GetParamOp::create(
          b, loc,
          RankedTensorType::get({type.getDimSize(0), type.getDimSize(1) / block},
                                b.getF32Type()),
          get.getName(), ParamBuffer::weight_scales);
    Value weight = DequantizeOp::create(b, loc, type, values, scales);
    op.getWeightMutable().assign(weight);
    param->setAttr(kLowPrecisionAttr, b.getUnitAttr());
  }
};

} // namespace
} // namespace attn
