//===- Pipeline.cpp - The attnc compilation pipeline ----------------------===//
//
// The stages of the pipeline and which passes run between them.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipeline/Pipeline.h"

#include "attn/Target/CudaTarget.h"

#include "attn/Codegen/Passes.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Transforms/Passes.h"
#include "attn/EntryPoints/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

#include <iterator>

using namespace mlir;

namespace attn {

/// The `--stage` name of each stage, in the order of `Stage`.
static constexpr llvm::StringLiteral kStageNames[] = {
    "tokens",    "ast",   "params",    "attn", "attn-opt",
    "attn-grad", "loops", "llvm-mlir", "llvm", "asm", "ptx"};
static_assert(std::size(kStageNames) == static_cast<size_t>(Stage::Ptx) + 1,
              "one name per stage");

std::optional<Stage> parseStage(llvm::StringRef name) {
  for (auto [index, stageName] : llvm::enumerate(kStageNames))
    if (name == stageName)
      return static_cast<Stage>(index);
  return std::nullopt;
}

llvm::StringRef stageName(Stage stage) {
  return kStageNames[static_cast<size_t>(stage)];
}

llvm::StringRef allStageNames() {
  static const std::string names =
      llvm::join(std::begin(kStageNames), std::end(kStageNames), ", ");
  return names;
}

/// Both targets' way from attn-opt to linalg on buffers: parameters bound,
/// attn lowered to linalg on tensors, bufferised (results allocated,
/// temporaries freed after their last use). The GPU target marks the
/// arguments passed in host memory and lowers attention to parallel loops
/// over its rows; the CPU target's attention tiles are its cost model's.
static void addLinalgOnBuffers(OpPassManager &pm, bool gpu,
                               const CpuCostModel *cpu = nullptr) {
  pm.addPass(createAttnBindParams());
  pm.addPass(createAttnBindKVCache());
  AttnFinalizeEntryPointsOptions finalize;
  finalize.markHostMemory = gpu;
  pm.addPass(createAttnFinalizeEntryPoints(finalize));
  // Functions nothing calls any more: the loss of `attn.train` (dropped
  // with it) when --entry did not ask for it.
  pm.addPass(createSymbolDCEPass());
  ConvertAttnToLinalgOptions toLinalg;
  toLinalg.attention = gpu ? "rows" : "tiles";
  toLinalg.warpNorms = gpu;
  if (cpu) {
    toLinalg.queryTile = cpu->attentionQueryTile;
    toLinalg.keyTile = cpu->attentionKeyTile;
  }
  pm.addPass(createConvertAttnToLinalg(toLinalg));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Chains of element-wise generics (a linear's epilogue and the residual
  // add, layer norm's centring and squaring) become one generic each.
  pm.addNestedPass<func::FuncOp>(createAttnFuseElementwise());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Values stored into parameter buffers (train_step's weights and moments,
  // the gradients of <loss>_grad) are computed in their slot; CSE then
  // merges an update's read of a slot with its write of the same slot.
  pm.addPass(createAttnParamWritesInPlace());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // A value built only to be stored somewhere (new keys and values for
  // the cache) is built in its destination rather than copied there: on
  // the GPU, where each copy is a kernel. Not on the CPU, where the copy
  // is cheap and the eliminated form of the tiled attention makes
  // one-shot bufferisation's analysis take minutes (gpt2_small: over 10
  // minutes instead of 0.1 s; docs/Codegen.md, Compile time).
  if (gpu)
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // train_step's call of <loss>_grad, on buffers now (attn-bind-params took
  // it out): its results are owned like any call's.
  pm.addPass(createAttnComposeEntryCalls());
  bufferization::BufferDeallocationPipelineOptions deallocation;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);
}

/// attn-opt to loops for the CPU: linalg on buffers (results allocated with
/// malloc), then register-tiled, vectorised loops on the thread pool.
static void buildLoopsPipeline(OpPassManager &pm, const CpuCostModel &model) {
  // The passes that consume the cost model derive it from the target again.
  const VectorTarget &target = model.target;
  addLinalgOnBuffers(pm, /*gpu=*/false, &model);
  // Matrix products next to their zero fill and epilogue, before the
  // temporaries are planned (the fused kernel reads A and B while it writes
  // the epilogue's output, so they must not share memory).
  pm.addNestedPass<func::FuncOp>(createAttnGroupMatmulEpilogues());
  pm.addNestedPass<func::FuncOp>(createAttnReuseBuffers());
  pm.addNestedPass<func::FuncOp>(createAttnPlanArena());
  // Code generation on buffers: matrix products as packed, register-tiled
  // vector loops; every other linalg op tiled along its innermost loop and
  // vectorised; what is left becomes scalar loops.
  AttnMatmulToVectorOptions matmul;
  matmul.lanes = target.lanes;
  matmul.registers = target.registers;
  matmul.precision = model.bf16Products ? "bf16" : "f32";
  matmul.amx = CpuCostModel::bf16KernelOption(model.bf16Kernel).str();
  matmul.l2Bytes = model.caches.l2Bytes;
  matmul.int16Dot = target.int16Dot;
  matmul.fmaUnits = target.fmaUnits;
  pm.addPass(createAttnMatmulToVector(matmul));
  AttnVectorizeLinalgOptions vectorize;
  vectorize.lanes = target.lanes;
  vectorize.registers = target.registers;
  pm.addNestedPass<func::FuncOp>(createAttnVectorizeLinalg(vectorize));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Polynomial exp/tanh/erf, then the vector ops down to 1-D.
  pm.addNestedPass<func::FuncOp>(createAttnMathApproximation());
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMaskPass());
  pm.addNestedPass<func::FuncOp>(createAttnLowerVector());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Independent outer loops (attention's batch x heads, element-wise rows)
  // on the context's thread pool.
  AttnParallelizeLoopsOptions parallelize;
  parallelize.lanes = target.lanes;
  parallelize.registers = target.registers;
  pm.addPass(createAttnParallelizeLoops(parallelize));
}

/// attn-opt to loops for the GPU: as on the CPU up to the arena plan, with
/// attention as loops over its rows; then matrix products become
/// warp-tiled kernels for the tensor cores (`tensorCores`, --precision
/// tf32) or kernels of per-thread register tiles (f32), and products of
/// few rows partial sums, every other linalg op a parallel loop nest and
/// each outermost one a kernel, launched in order on one stream (the host
/// waits only where it reads a device value and at the end of each
/// function).
static void buildGpuLoopsPipeline(OpPassManager &pm, bool onHost,
                                  bool tensorCores) {
  addLinalgOnBuffers(pm, /*gpu=*/true);
  // Attention's row loops, now on buffers, as the parallel loops the
  // mapping takes.
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(createAttnReuseBuffers());
  pm.addNestedPass<func::FuncOp>(createAttnPlanArena());
  if (tensorCores)
    pm.addNestedPass<func::FuncOp>(createAttnGpuTensorCoreProducts());
  else
    pm.addNestedPass<func::FuncOp>(createAttnGpuSimtProducts());
  // After the tiled products: the rows their blocks leave are products of
  // few rows too.
  pm.addNestedPass<func::FuncOp>(createAttnGpuFewRowProducts());
  // The loops written for a warp's lanes (norms, products of few rows): a
  // warp's 32 lanes (the default) on the GPU, one on the host.
  AttnGpuWarpLanesOptions warpLanes;
  if (onHost)
    warpLanes.lanes = 1;
  pm.addNestedPass<func::FuncOp>(createAttnGpuWarpLanes(warpLanes));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Polynomial exp/tanh/erf/log in the kernels: no libdevice is needed.
  pm.addNestedPass<func::FuncOp>(createAttnMathApproximation());
  pm.addNestedPass<func::FuncOp>(createAttnGpuMapLoops());
  // cuda-on-host: the same loops, run in order by the CPU's lowering.
  if (onHost) {
    pm.addNestedPass<func::FuncOp>(createAttnGpuLoopsOnHost());
    return;
  }
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  // Constants and sizes computed from them into the kernels: immediates in
  // the PTX (a division by a constant, a loop of known trip count), not
  // kernel parameters.
  pm.addNestedPass<func::FuncOp>(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  // One in-order stream: the host waits only where it reads.
  pm.addNestedPass<func::FuncOp>(createAttnGpuElideHostWaits());
}

/// loops to the LLVM dialect for the GPU: kernels to NVVM and PTX (loaded by
/// the CUDA driver's JIT), host code to LLVM calling the GPU runtime
/// functions libattnrt implements over the driver.
static void buildGpuLLVMPipeline(OpPassManager &pm, llvm::StringRef chip) {
  // The tiles a block's threads share, in shared memory, their copies
  // asynchronous where the kernel copies one stage while it reads another.
  pm.addNestedPass<gpu::GPUModuleOp>(createAttnGpuSharedTiles());
  // Warp-level products (--precision tf32) to mma.sync while they are
  // still structured loops.
  pm.addNestedPass<gpu::GPUModuleOp>(createAttnGpuMmaSync());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertNVGPUToNVVMPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addNestedPass<func::FuncOp>(createAttnLowerDynamicReshapes());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  GpuNVVMAttachTargetOptions nvvm;
  nvvm.chip = chip.str();
  nvvm.optLevel = 3;
  // LLVM's NVPTX back end defaults to PTX 6.0, which sm_90 rejects.
  nvvm.features = "+ptx80";
  pm.addPass(createGpuNVVMAttachTarget(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  // Its calls of libdevice (fma, floor, sqrt, ...) resolved in the module:
  // the PTX must not depend on a CUDA toolkit at compile time.
  pm.addNestedPass<gpu::GPUModuleOp>(createAttnGpuLibdeviceIntrinsics());
  // The host's reshapes and views (gpu-to-llvm leaves memref.reshape).
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// loops to the LLVM dialect, with a C interface per entry point.
///
/// The conversions that work on one function at a time run nested on each
/// `func.func` (spread over the context's threads), the ones that need the
/// whole module (signatures, declarations of library functions, the final
/// casts) on the module: the functions convert in parallel, and a
/// conversion, which keeps what it replaces until it is done, holds one
/// function's worth at a time (docs/Codegen.md, Compile time).
static void buildLLVMPipeline(OpPassManager &pm, bool amxTiles) {
  OpPassManager &functions = pm.nest<func::FuncOp>();
  // Transfers of rank > 1 (edge blocks of the packing) become 1-D ones.
  functions.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  functions.addPass(createSCFToControlFlowPass());
  functions.addPass(createAttnLowerDynamicReshapes());
  functions.addPass(memref::createExpandStridedMetadataPass());
  functions.addPass(createLowerAffinePass());
  // Reductions reassociate (a tree of vector adds, not a serial chain).
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.reassociateFPReductions = true;
  vectorToLLVM.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  functions.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  // aligned_alloc: allocated == aligned, so the runtime adopts results
  // without copying them (runtime/include/attn/abi.h).
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useAlignedAlloc = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  // Math with an LLVM intrinsic first; what is left (erf) calls libm.
  OpPassManager &math = pm.nest<func::FuncOp>();
  math.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  OpPassManager &scalars = pm.nest<func::FuncOp>();
  scalars.addPass(createArithToLLVMConversionPass());
  scalars.addPass(createConvertIndexToLLVMPass());
  scalars.addPass(createUBToLLVMConversionPass()); // the vectoriser's ub.poison
  if (amxTiles) {
    // AMX tiles live across loops (the accumulators): the branches that
    // carry them convert with the AMX ops, through one type converter
    // that knows all three (the dialects' ConvertToLLVM interfaces).
    pm.addPass(createConvertToLLVMPass());
  } else {
    pm.addPass(createConvertFuncToLLVMPass());
    pm.addPass(createConvertControlFlowToLLVMPass());
  }
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addNestedPass<LLVM::LLVMFuncOp>(createCanonicalizerPass());
}

CpuCostModel cpuCostModel(const PipelineOptions &options) {
  CpuCostModel model = CpuCostModel::forTarget(
      options.target, /*bf16Products=*/options.precision == "bf16");
  using Bf16Kernel = CpuCostModel::Bf16Kernel;
  if (!model.bf16Products)
    return model;
  if (options.amx == "emulate")
    model.bf16Kernel = Bf16Kernel::EmulatedAmxTiles;
  else if (options.amx == "auto" && model.target.amxBf16)
    model.bf16Kernel = Bf16Kernel::AmxTiles;
  return model;
}

static void addAttnGradPasses(OpPassManager &pm,
                              const std::vector<std::string> &gradFns) {
  AttnAutodiffOptions autodiff;
  autodiff.fns.assign(gradFns.begin(), gradFns.end());
  pm.addPass(createAttnAutodiff(autodiff));
  pm.addPass(createAttnBuildTrainStep());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After CSE: each sdpa_grad's output operand is then the forward's sdpa.
  pm.addPass(createAttnShareAttentionStats());
}

void buildAttnPipeline(OpPassManager &pm, const PipelineOptions &options,
                       Stage from) {
  auto runs = [&](Stage stage) {
    return from < stage && stage <= options.lastStage;
  };
  // attn-opt: local simplification and fusion.
  // `training` says the caller goes on to attn-grad (maybe in a later run
  // from attn-opt): the training entries' forward pass is taken before
  // canonicalisation folds away the loss's inference dropout, and is
  // differentiated in attn-grad, after fusion.
  bool training = options.training;
  if (runs(Stage::AttnOpt)) {
    if (training) {
      AttnAutodiffPrimalOptions primal;
      primal.fns.assign(options.gradFns.begin(), options.gradFns.end());
      pm.addPass(createAttnAutodiffPrimal(primal));
    }
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(createAttnIncrementalDecoding());
    pm.addPass(createAttnAttentionWeights());
    pm.addPass(createCanonicalizerPass());
    // Activations and residual adds into the linear and norm ops that
    // carry them, in every entry point (prefill and decode_step included).
    pm.addPass(createAttnFuseEpilogues());
  }
  // attn-grad: the gradient and training-step entry points, with the forward
  // pass they recompute shared with the reverse pass by CSE.
  if (training && runs(Stage::AttnGrad))
    addAttnGradPasses(pm, options.gradFns);
  std::optional<llvm::StringRef> chip = cudaChip(options.target);
  if (runs(Stage::Loops)) {
    if (mapsLoopsForGpu(options.target)) {
      buildGpuLoopsPipeline(pm, /*onHost=*/!chip,
                            /*tensorCores=*/options.precision == "tf32");
    } else {
      buildLoopsPipeline(pm, cpuCostModel(options));
    }
  }
  if (runs(Stage::LLVMMLIR)) {
    if (chip)
      buildGpuLLVMPipeline(pm, *chip);
    else
      buildLLVMPipeline(pm, cpuCostModel(options).bf16Kernel ==
                                CpuCostModel::Bf16Kernel::AmxTiles);
  }
}

void registerAttnPipelines() {
  PassPipelineRegistration<>(
      "attn-to-attn-opt",
      "Runs the attnc pipeline from the attn stage to the attn-opt stage",
      [](OpPassManager &pm) {
        buildAttnPipeline(pm, PipelineOptions{Stage::AttnOpt});
      });
  PassPipelineRegistration<>(
      "attn-to-attn-grad",
      "Runs the attnc pipeline from the attn stage to the attn-grad stage, "
      "with the training entry points",
      [](OpPassManager &pm) {
        PipelineOptions options{Stage::AttnGrad};
        options.training = true;
        buildAttnPipeline(pm, options);
      });
  PassPipelineRegistration<>(
      "attn-opt-to-attn-grad",
      "Runs the attnc pipeline from the attn-opt stage to the attn-grad stage "
      "(the autodiff pass, then canonicalisation and CSE)",
      [](OpPassManager &pm) { addAttnGradPasses(pm, {}); });
  PassPipelineRegistration<>(
      "attn-opt-to-loops",
      "Runs the attnc pipeline from the attn-opt stage to the loops stage",
      [](OpPassManager &pm) {
        buildLoopsPipeline(pm, CpuCostModel::forTarget("host"));
      });
  PassPipelineRegistration<>(
      "attn-opt-to-gpu-loops",
      "Runs the attnc pipeline from the attn-opt stage to the loops stage "
      "of the GPU target (kernels outlined, launched asynchronously)",
      [](OpPassManager &pm) {
        buildGpuLoopsPipeline(pm, /*onHost=*/false, /*tensorCores=*/false);
      });
  PassPipelineRegistration<>(
      "attn-gpu-loops-to-llvm",
      "Runs the attnc pipeline from the GPU target's loops stage to the "
      "llvm-mlir stage (kernels as PTX for sm_90)",
      [](OpPassManager &pm) { buildGpuLLVMPipeline(pm, "sm_90"); });
  PassPipelineRegistration<>(
      "attn-loops-to-llvm",
      "Runs the attnc pipeline from the loops stage to the llvm-mlir stage",
      [](OpPassManager &pm) { buildLLVMPipeline(pm, /*amxTiles=*/false); });
}

} // namespace attn
