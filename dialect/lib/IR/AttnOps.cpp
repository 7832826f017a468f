//===- AttnOps.cpp - Verifiers and folds of attn ops ----------------------===//
//
// The invariants ODS cannot state (attribute ranges, shapes of ops whose
// result type is given rather than inferred, symbol references) and the folds
// of local identities. Result-type inference is in AttnShapeInference.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace attn;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

static std::string quote(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, Type type) {
  // I64Attr getters return uint64_t; `axis` takes them back as signed.
  int64_t rank = cast<RankedTensorType>(type).getRank();
  if (axis >= 0 && axis < rank)
    return success();
  return op->emitOpError() << "axis " << axis << " is out of range for "
                           << quote(type);
}

/// Checks that the index operands match the dynamic dimensions of `result`.
static LogicalResult verifyDynamicSizes(Operation *op, ValueRange sizes,
                                        RankedTensorType result) {
  if (sizes.size() == result.getNumDynamicDims())
    return success();
  return op->emitOpError() << "has " << sizes.size()
                           << " dynamic size operands but the result "
                           << quote(result) << " has "
                           << result.getNumDynamicDims()
                           << " dynamic dimensions";
}

//===----------------------------------------------------------------------===//
// Parameters and the training configuration
//===----------------------------------------------------------------------===//

Value attn::createSplat(OpBuilder &b, Location loc, RankedTensorType type,
                        double value) {
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type,
                             b.getFloatAttr(type.getElementType(), value)));
}

bool attn::isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

Value attn::createActivation(OpBuilder &b, Location loc, Activation activation,
                             Value x) {
  switch (activation) {
  case Activation::relu:
    return ReluOp::create(b, loc, x);
  case Activation::gelu:
    return GeluOp::create(b, loc, x);
  case Activation::gelu_tanh:
    return GeluTanhOp::create(b, loc, x);
  case Activation::silu:
    return SiluOp::create(b, loc, x);
  case Activation::tanh:
    return TanhOp::create(b, loc, x);
  case Activation::sigmoid:
    return SigmoidOp::create(b, loc, x);
  case Activation::none:
    break;
  }
  return x;
}

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError() << "parameter " << quote(type)
                         << " must have a static shape";
  ArrayRef<double> args = getInitArgs();
  size_t expected = 0;
  switch (getInit()) {
  case InitKind::zeros:
  case InitKind::ones:
    break;
  case InitKind::normal:
  case InitKind::uniform:
    expected = 2;
    break;
  case InitKind::xavier_uniform:
    expected = 1;
    break;
  }
  if (args.size() != expected)
    return emitOpError() << "initialiser " << stringifyInitKind(getInit())
                         << " takes " << expected << " arguments, got "
                         << args.size();
  if (getInit() == InitKind::normal && args[1] < 0)
    return emitOpError() << "normal initialiser has a negative standard "
                            "deviation "
                         << args[1];
  if (getInit() == InitKind::uniform && args[0] > args[1])
    return emitOpError() << "uniform initialiser has lower bound " << args[0]
                         << " above upper bound " << args[1];
  if (getInit() == InitKind::xavier_uniform && type.getRank() < 2)
    return emitOpError() << "xavier_uniform needs a parameter of rank 2 or "
                            "more, got "
                         << quote(type);
  return success();
}

LogicalResult
GetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getNameAttr());
  if (!param)
    return emitOpError() << "'" << getName()
                         << "' does not name an attn.param";
  auto type = cast<RankedTensorType>(getType());
  RankedTensorType paramType = param.getTensorType();
  switch (getBuffer()) {
  case ParamBuffer::weights:
    if (type.getShape() != paramType.getShape() ||
        !(type.getElementType().isBF16() ||
          type.getElementType().isSignlessInteger(8)))
      return emitOpError() << "a weights read has the parameter's shape in "
                              "bf16 or i8, not "
                           << quote(type);
    return success();
  case ParamBuffer::weight_scales:
    if (paramType.getRank() != 2 || type.getRank() != 2 ||
        !type.getElementType().isF32() ||
        type.getDimSize(0) != paramType.getDimSize(0) ||
        type.getDimSize(1) <= 0 ||
        paramType.getDimSize(1) % type.getDimSize(1) != 0)
      return emitOpError() << "the scales of a weight [N, K] are [N, K / "
                              "block] f32, not "
                           << quote(type);
    return success();
  default:
    break;
  }
  if (paramType != type)
    return emitOpError() << "result type " << quote(getType())
                         << " differs from the parameter's type "
                         << quote(param.getType());
  return success();
}

LogicalResult DequantizeOp::verify() {
  auto values = cast<RankedTensorType>(getValues().getType());
  auto result = cast<RankedTensorType>(getType());
  if (values.getRank() != 2 || result.getShape() != values.getShape())
    return emitOpError() << "takes a matrix and returns it in f32, not "
                         << quote(values) << " to " << quote(result);
  bool int8 = values.getElementType().isSignlessInteger(8);
  if (!int8)
    return getScales() ? emitOpError() << "bf16 values take no scales"
                       : success();
  if (!getScales())
    return emitOpError() << "i8 values need their scales";
  auto scales = cast<RankedTensorType>(getScales().getType());
  if (scales.getRank() != 2 || scales.getDimSize(0) != values.getDimSize(0) ||
      !scales.hasStaticShape() || !values.hasStaticShape() ||
      values.getDimSize(1) % scales.getDimSize(1) != 0)
    return emitOpError() << "the scales of " << quote(values)
                         << " are [N, K / block], not " << quote(scales);
  return success();
}

LogicalResult
SetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getNameAttr());
  if (!param)
    return emitOpError() << "'" << getName()
                         << "' does not name an attn.param";
  if (param.getType() != getValue().getType())
    return emitOpError() << "value type " << quote(getValue().getType())
                         << " differs from the parameter's type "
                         << quote(param.getType());
  return success();
}

/// Parameters start at multiples of this many elements (64 bytes).
static constexpr int64_t kParamAlignment = 16;

SmallVector<ParamSlot> attn::computeParamLayout(ModuleOp module,
                                                int64_t &numElements) {
  SmallVector<ParamSlot> slots;
  int64_t offset = 0;
  for (ParamOp param : module.getOps<ParamOp>()) {
    slots.push_back({param, offset});
    int64_t size = param.getTensorType().getNumElements();
    offset += (size + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
  }
  numElements = offset;
  return slots;
}

/// The parameter buffer's size in the module around `op`.
static int64_t paramBufferSize(Operation *op) {
  int64_t size = 0;
  if (auto module = op->getParentOfType<ModuleOp>())
    computeParamLayout(module, size);
  return size;
}

/// Whether `type` is the flat buffer of the module around `op`.
static LogicalResult verifyParamBufferType(Operation *op, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t size = paramBufferSize(op);
  if (tensor.getRank() != 1 || !tensor.getElementType().isF32() ||
      tensor.getDimSize(0) != size)
    return op->emitOpError() << "type " << type
                             << " is not the module's parameter buffer, "
                             << "tensor<" << size << "xf32>";
  return success();
}

LogicalResult GetParamBufferOp::verify() {
  return verifyParamBufferType(*this, getType());
}

LogicalResult SetParamBufferOp::verify() {
  return verifyParamBufferType(*this, getValue().getType());
}

/// The hyperparameters each optimizer and schedule accepts.
static ArrayRef<StringRef> allowedKeys(OptimizerKind) {
  static const StringRef keys[] = {"lr", "beta1", "beta2", "eps",
                                   "weight_decay"};
  return keys;
}

static ArrayRef<StringRef> allowedKeys(ScheduleKind kind) {
  static const StringRef cosine[] = {"warmup", "steps"};
  static const StringRef rsqrt[] = {"warmup", "d_model"};
  switch (kind) {
  case ScheduleKind::constant:
    return {};
  case ScheduleKind::cosine:
    return cosine;
  case ScheduleKind::warmup_rsqrt:
    return rsqrt;
  }
  llvm_unreachable("unknown schedule kind");
}

/// Checks that `args` has only numeric entries whose keys are in `keys`.
static LogicalResult verifyHyperparameters(Operation *op, StringRef what,
                                           StringRef kind,
                                           DictionaryAttr args,
                                           ArrayRef<StringRef> keys) {
  for (NamedAttribute arg : args) {
    if (!llvm::is_contained(keys, arg.getName().strref())) {
      InFlightDiagnostic diag = op->emitOpError()
                                << what << " " << kind
                                << " has no parameter '"
                                << arg.getName().getValue() << "'";
      if (keys.empty())
        return diag << "; it takes none";
      diag << "; expected one of ";
      llvm::interleaveComma(keys, diag);
      return diag;
    }
    auto integer = dyn_cast<IntegerAttr>(arg.getValue());
    if (!isa<FloatAttr>(arg.getValue()) &&
        !(integer && !integer.getType().isInteger(1)))
      return op->emitOpError() << what << " parameter '"
                               << arg.getName().getValue()
                               << "' must be a number";
  }
  return success();
}

LogicalResult TrainOp::verify() {
  if (failed(verifyHyperparameters(*this, "optimizer",
                                   stringifyOptimizerKind(getOptimizer()),
                                   getOptimizerArgs(),
                                   allowedKeys(getOptimizer()))))
    return failure();
  return verifyHyperparameters(*this, "schedule",
                               stringifyScheduleKind(getSchedule()),
                               getScheduleArgs(), allowedKeys(getSchedule()));
}

LogicalResult TrainOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto fn =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(*this, getLossAttr());
  if (!fn)
    return emitOpError() << "loss '" << getLoss()
                         << "' does not name a function";
  ArrayRef<Type> results = fn.getFunctionType().getResults();
  auto scalar = RankedTensorType::get({}, Float32Type::get(getContext()));
  if (results.size() != 1 || results[0] != scalar)
    return emitOpError() << "loss function '" << getLoss()
                         << "' must return one scalar tensor<f32>";
  return success();
}

LogicalResult DimOp::verify() {
  return verifyAxis(*this, getAxis(), getInput().getType());
}

OpFoldResult DimOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getInput().getType());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= type.getRank() || type.isDynamicDim(axis))
    return {};
  return IntegerAttr::get(IndexType::get(getContext()), type.getDimSize(axis));
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

/// Whether `attr` is a splat constant equal to `value` (0 or 1, exact in
/// every float format), compared in the splat's own format.
static bool isSplat(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return false;
  APFloat element = splat.getSplatValue<APFloat>();
  APFloat identity(value);
  bool losesInfo = false;
  identity.convert(element.getSemantics(), APFloat::rmNearestTiesToEven,
                   &losesInfo);
  return element.compare(identity) == APFloat::cmpEqual;
}

/// `x op c` folds to `x` when `c` is the identity of `op` and does not change
/// the result's shape by broadcasting.
static OpFoldResult foldRightIdentity(Operation *op, Value lhs,
                                      Attribute rhsAttr, double identity) {
  if (lhs.getType() == op->getResult(0).getType() && isSplat(rhsAttr, identity))
    return lhs;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 0))
    return r;
  return foldRightIdentity(*this, getRhs(), adaptor.getLhs(), 0);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 0);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1))
    return r;
  return foldRightIdentity(*this, getRhs(), adaptor.getLhs(), 1);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1);
}

LogicalResult CastOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getType());
  if (input.getShape() != result.getShape())
    return emitOpError() << "cannot change the shape: " << quote(input)
                         << " to " << quote(result);
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// A seed (training) comes with the number of its random stream.
static LogicalResult verifySeedAndStream(Operation *op, Value seed,
                                         std::optional<uint64_t> stream) {
  if (seed && !stream)
    return op->emitOpError() << "has a seed but no stream number";
  if (!seed && stream)
    return op->emitOpError() << "has a stream number but no seed";
  return success();
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return emitOpError() << "rate " << rate << " is not in [0, 1)";
  return verifySeedAndStream(*this, getSeed(), getStream());
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  // Without a seed (inference) dropout is the identity.
  if (getRate().isZero() || !getSeed())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getType());
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "cannot change the element type: " << quote(input)
                         << " to " << quote(result);
  if (failed(verifyDynamicSizes(*this, getDynamicSizes(), result)))
    return failure();
  if (input.hasStaticShape() && result.hasStaticShape() &&
      input.getNumElements() != result.getNumElements())
    return emitOpError() << "cannot reshape " << quote(input) << " ("
                         << input.getNumElements() << " elements) to "
                         << quote(result) << " (" << result.getNumElements()
                         << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  auto result = cast<RankedTensorType>(getType());
  if (getInput().getType() == result && result.hasStaticShape())
    return getInput();
  // A reshape of a reshape reads the original elements directly, unless
  // that would state a static mismatch the dynamic middle shape hid.
  auto inner = getInput().getDefiningOp<ReshapeOp>();
  auto source =
      inner ? cast<RankedTensorType>(inner.getInput().getType()) : nullptr;
  if (inner && !(source.hasStaticShape() && result.hasStaticShape() &&
                 source.getNumElements() != result.getNumElements())) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (identity && getInput().getType() == getType())
    return getInput();
  // Two transposes compose into one.
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

OpFoldResult MergeHeadsOp::fold(FoldAdaptor) {
  auto split = getInput().getDefiningOp<SplitHeadsOp>();
  if (split && split.getInput().getType() == getType())
    return split.getInput();
  return {};
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t axis = getAxis(), end = getEnd();
  if (getStart() == 0 && axis >= 0 && axis < input.getRank() &&
      input.getDimSize(axis) == end && input == getType())
    return getInput();
  return {};
}

LogicalResult BroadcastOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getType());
  if (failed(verifyDynamicSizes(*this, getDynamicSizes(), result)))
    return failure();
  bool compatible = input.getElementType() == result.getElementType() &&
                    input.getRank() <= result.getRank();
  for (int64_t i = 1; compatible && i <= input.getRank(); ++i) {
    int64_t from = input.getDimSize(input.getRank() - i);
    int64_t to = result.getDimSize(result.getRank() - i);
    compatible = from == 1 || from == to || from == kDynamic || to == kDynamic;
  }
  if (!compatible)
    return emitOpError() << "cannot broadcast " << quote(input) << " to "
                         << quote(result);
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      cast<RankedTensorType>(getType()).hasStaticShape())
    return getInput();
  return {};
}

/// Checks a size operand against the static size of a result dimension.
static LogicalResult verifyLength(Operation *op, Value length,
                                  RankedTensorType result) {
  APInt value;
  if (!matchPattern(length, m_ConstantInt(&value)))
    return success();
  if (value.getSExtValue() < 0)
    return op->emitOpError() << "length " << value.getSExtValue()
                             << " is negative";
  if (result.isDynamicDim(0) || value.getSExtValue() == result.getDimSize(0))
    return success();
  return op->emitOpError() << "length " << value.getSExtValue()
                           << " differs from the result " << quote(result);
}

LogicalResult PositionsOp::verify() {
  return verifyLength(*this, getLength(), cast<RankedTensorType>(getType()));
}

LogicalResult SinusoidalOp::verify() {
  auto result = cast<RankedTensorType>(getType());
  if (result.isDynamicDim(1))
    return emitOpError() << "the feature dimension of " << quote(result)
                         << " must be static";
  return verifyLength(*this, getLength(), result);
}

//===----------------------------------------------------------------------===//
// Reductions, attention and training
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType());
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), getType());
}

LogicalResult LogSoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), getType());
}

LogicalResult ActivationGradOp::verify() {
  if (getActivation() == Activation::none)
    return emitOpError() << "needs an activation other than none";
  return success();
}

/// Attention attributes: a positive scale and a dropout rate in [0, 1).
static LogicalResult verifyAttentionAttrs(Operation *op,
                                          std::optional<APFloat> scale,
                                          double dropout) {
  if (scale && !(scale->convertToDouble() > 0))
    return op->emitOpError() << "scale " << scale->convertToDouble()
                             << " is not positive";
  if (!(dropout >= 0 && dropout < 1))
    return op->emitOpError() << "dropout " << dropout << " is not in [0, 1)";
  return success();
}

LogicalResult SdpaOp::verify() {
  if (failed(verifyAttentionAttrs(*this, getScale(),
                                  getDropout().convertToDouble())))
    return failure();
  return verifySeedAndStream(*this, getSeed(), getStream());
}

LogicalResult SdpaGradOp::verify() {
  if (failed(verifyAttentionAttrs(*this, getScale(),
                                  getDropout().convertToDouble())))
    return failure();
  return verifySeedAndStream(*this, getSeed(), getStream());
}

LogicalResult GatherGradOp::verify() {
  auto ids = cast<RankedTensorType>(getIds().getType());
  auto grad = cast<RankedTensorType>(getGradOutput().getType());
  auto result = cast<RankedTensorType>(getType());
  bool compatible = grad.getRank() == ids.getRank() + 1 &&
                    grad.getElementType() == result.getElementType();
  for (int64_t d = 0; compatible && d < ids.getRank(); ++d)
    compatible = ids.getDimSize(d) == grad.getDimSize(d) ||
                 ids.isDynamicDim(d) || grad.isDynamicDim(d);
  if (compatible)
    compatible = grad.getShape().back() == result.getDimSize(1) ||
                 grad.isDynamicDim(grad.getRank() - 1) ||
                 result.isDynamicDim(1);
  if (!compatible)
    return emitOpError() << "gradient " << quote(grad) << " does not match ids "
                         << quote(ids) << " and table " << quote(result);
  return success();
}

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  return success();
}

LogicalResult KVCacheReadOp::verify() {
  auto keys = cast<RankedTensorType>(getKeys().getType());
  auto values = cast<RankedTensorType>(getValues().getType());
  if (keys.getRank() != 4 || values.getRank() != 4)
    return emitOpError() << "keys " << quote(keys) << " and values "
                         << quote(values) << " must be [B, H, S, D] tensors";
  return success();
}

#define GET_OP_CLASSES
#include "attn/Dialect/IR/AttnOps.cpp.inc"
