//===- ObjectEmitter.cpp - From the LLVM dialect to an object file --------===//
//
// Translates the lowered module to LLVM IR, adds the `attn_model_info` the
// runtime reads (the layout of runtime/include/attn/abi.h, built with the C
// ABI's natural alignment), optionally a `main`; runs LLVM's optimisation
// pipeline for the target machine and emits machine code in-process
// (ParallelCodegen.cpp does both on several threads).
//
//===----------------------------------------------------------------------===//

#include "attn/Target/ObjectEmitter.h"

#include "attn/Target/CudaTarget.h"
#include "attn/abi.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/Timer.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"

using namespace mlir;

namespace attn {

/// Whether the x86-64 CPU `cpu` (a name LLVM knows) has AVX2 and FMA, which
/// the CPU kernels need.
static bool hasAvx2(llvm::StringRef cpu) {
  llvm::SmallVector<llvm::StringRef> features;
  llvm::X86::getFeaturesForCPU(cpu, features);
  return llvm::is_contained(features, "avx2") &&
         llvm::is_contained(features, "fma");
}

bool isKnownTarget(llvm::StringRef target) {
  // The kernels need AVX2 and FMA (x86-64-v3 and later CPUs).
  return target == "host" || mapsLoopsForGpu(target) ||
         (llvm::X86::parseArchX86(target, /*Only64Bit=*/true) !=
              llvm::X86::CK_None &&
          hasAvx2(target));
}

/// A target machine for `target`: the build machine's CPU and features for
/// `host`, the named x86-64 CPU or micro-architecture level otherwise.
static std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const CodegenOptions &options, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpu = options.target;
  if (mapsLoopsForGpu(options.target))
    cpu = kCudaHostCpu.str();
  std::string features;
  if (options.target == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures featureSet;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      featureSet.AddFeature(feature.first(), feature.second);
    features = featureSet.getString();
  }
  llvm::TargetOptions targetOptions;
  auto level = options.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                                       : llvm::CodeGenOptLevel::Default;
  return std::unique_ptr<llvm::TargetMachine>(
      target->createTargetMachine(triple, cpu, features, targetOptions,
                                  llvm::Reloc::PIC_, std::nullopt, level));
}

namespace {
/// Builds the constant tables of abi.h in an LLVM module.
class MetadataBuilder {
public:
  MetadataBuilder(llvm::Module &module)
      : module(module), context(module.getContext()),
        ptr(llvm::PointerType::get(context, 0)),
        i32(llvm::Type::getInt32Ty(context)),
        i64(llvm::Type::getInt64Ty(context)) {}

  llvm::Constant *string(llvm::StringRef text) {
    llvm::Constant *data = llvm::ConstantDataArray::getString(context, text);
    auto *global = new llvm::GlobalVariable(module, data->getType(), true,
                                            llvm::GlobalValue::PrivateLinkage,
                                            data, ".attn.str");
    global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return global;
  }

  /// A private constant array; a null pointer when empty.
  llvm::Constant *array(llvm::Type *element,
                        llvm::ArrayRef<llvm::Constant *> values,
                        llvm::StringRef name) {
    if (values.empty())
      return llvm::ConstantPointerNull::get(ptr);
    auto *type = llvm::ArrayType::get(element, values.size());
    return new llvm::GlobalVariable(
        module, type, true, llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantArray::get(type, values), name);
  }

  llvm::Constant *int64Array(llvm::ArrayRef<int64_t> values) {
    llvm::SmallVector<llvm::Constant *> constants;
    for (int64_t v : values)
      constants.push_back(llvm::ConstantInt::get(i64, v));
    return array(i64, constants, ".attn.i64");
  }

  llvm::Constant *doubleArray(llvm::ArrayRef<double> values) {
    llvm::Type *f64 = llvm::Type::getDoubleTy(context);
    llvm::SmallVector<llvm::Constant *> constants;
    for (double v : values)
      constants.push_back(llvm::ConstantFP::get(f64, v));
    return array(f64, constants, ".attn.f64");
  }

  llvm::Constant *stringArray(llvm::ArrayRef<std::string> values) {
    llvm::SmallVector<llvm::Constant *> constants;
    for (const std::string &v : values)
      constants.push_back(string(v));
    return array(ptr, constants, ".attn.names");
  }

  // attn_tensor_info { name, kind, dtype, rank, shape, dim_names,
  //                    max_shape, id_limit }
  llvm::StructType *tensorType() {
    return llvm::StructType::get(context,
                                 {ptr, i32, i32, i32, ptr, ptr, ptr, i64});
  }
  llvm::Constant *tensor(const TensorInfo &t) {
    return llvm::ConstantStruct::get(
        tensorType(),
        {string(t.name), llvm::ConstantInt::get(i32, t.kind),
         llvm::ConstantInt::get(i32, t.dtype),
         llvm::ConstantInt::get(i32, t.shape.size()), int64Array(t.shape),
         stringArray(t.dimNames), int64Array(t.maxShape),
         llvm::ConstantInt::get(i64, t.idLimit)});
  }
  llvm::Constant *tensors(llvm::ArrayRef<TensorInfo> list) {
    llvm::SmallVector<llvm::Constant *> values;
    for (const TensorInfo &t : list)
      values.push_back(tensor(t));
    return array(tensorType(), values, ".attn.tensors");
  }

  // attn_param_info { name, rank, shape, offset, init, num_init_args, args,
  //                   weight_offset, scale_offset }
  llvm::StructType *paramType() {
    return llvm::StructType::get(context,
                                 {ptr, i32, ptr, i64, i32, i32, ptr, i64, i64});
  }
  llvm::Constant *param(const ParamInfo &p) {
    return llvm::ConstantStruct::get(
        paramType(),
        {string(p.name), llvm::ConstantInt::get(i32, p.shape.size()),
         int64Array(p.shape), llvm::ConstantInt::get(i64, p.offset),
         llvm::ConstantInt::get(i32, p.init),
         llvm::ConstantInt::get(i32, p.initArgs.size()),
         doubleArray(p.initArgs),
         llvm::ConstantInt::get(i64, p.weightOffset, /*IsSigned=*/true),
         llvm::ConstantInt::get(i64, p.scaleOffset, /*IsSigned=*/true)});
  }

  // attn_entry_info { name, num_args, args, num_results, results, fn,
  //                   arena_bytes, arena_bytes_per_batch }
  llvm::StructType *entryType() {
    return llvm::StructType::get(context,
                                 {ptr, i32, ptr, i32, ptr, ptr, i64, i64});
  }

  // attn_train_info { loss_fn, optimizer, lr, beta1, beta2, eps,
  //                   weight_decay, schedule, warmup, total_steps, d_model,
  //                   clip_norm }
  llvm::StructType *trainType() {
    llvm::Type *f64 = llvm::Type::getDoubleTy(context);
    return llvm::StructType::get(
        context, {ptr, i32, f64, f64, f64, f64, f64, i32, i64, i64, f64, f64});
  }
  llvm::Constant *train(const TrainInfo &t) {
    llvm::Type *f64 = llvm::Type::getDoubleTy(context);
    auto *value = llvm::ConstantStruct::get(
        trainType(),
        {string(t.lossFn), llvm::ConstantInt::get(i32, t.optimizer),
         llvm::ConstantFP::get(f64, t.lr), llvm::ConstantFP::get(f64, t.beta1),
         llvm::ConstantFP::get(f64, t.beta2), llvm::ConstantFP::get(f64, t.eps),
         llvm::ConstantFP::get(f64, t.weightDecay),
         llvm::ConstantInt::get(i32, t.schedule),
         llvm::ConstantInt::get(i64, t.warmup),
         llvm::ConstantInt::get(i64, t.totalSteps),
         llvm::ConstantFP::get(f64, t.dModel),
         llvm::ConstantFP::get(f64, t.clipNorm)});
    return new llvm::GlobalVariable(module, trainType(), true,
                                    llvm::GlobalValue::PrivateLinkage, value,
                                    ".attn.train");
  }

  // attn_model_info { abi_version, name, target, num_param_elements,
  //                   num_params, params, num_entries, entries,
  //                   kv_cache_floats_per_position, train, device,
  //                   weight_format, weight_block, num_weight_elements,
  //                   num_scale_elements, precision, int8_row_bits,
  //                   amx_tiles }
  llvm::StructType *modelType() {
    return llvm::StructType::get(context,
                                 {i32, ptr, ptr, i64, i32, ptr, i32, ptr, i64,
                                  ptr, i32, i32, i32, i64, i64, i32, i32, i32});
  }

  llvm::Module &module;
  llvm::LLVMContext &context;
  llvm::PointerType *ptr;
  llvm::IntegerType *i32, *i64;
};
} // namespace

namespace {
/// A timer of `options.timers` (none without them) for one step of the
/// LLVM half: started when made, stopped when it goes out of scope.
class StepTimer {
public:
  StepTimer(const CodegenOptions &options, llvm::StringRef name,
            llvm::StringRef description) {
    if (!options.timers)
      return;
    timer.init(name, description, *options.timers);
    timer.startTimer();
  }
  ~StepTimer() {
    if (timer.isRunning())
      timer.stopTimer();
  }

private:
  llvm::Timer timer;
};
} // namespace

/// LLVM's default module pipeline at `options.optLevel`, with the standard
/// instrumentation (so that LLVM's `-time-passes` and `-print-after` work),
/// and loop unrolling reduced to the full unrolling of loops with a small
/// constant trip count. The loops arrive from MLIR vectorised and
/// register-tiled (a matrix-product kernel's step is already 16 FMAs);
/// LLVM's partial and runtime unrolling of the other loops only multiplied
/// the code that instruction selection and register allocation then work
/// through: without it char_gpt's object is 21 % smaller and compiles in
/// 20 % less CPU time, and runs as fast (docs/Codegen.md, Compile time).
static void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                           const CodegenOptions &options) {
  llvm::OptimizationLevel level = llvm::OptimizationLevel::O3;
  switch (options.optLevel) {
  case 0:
    level = llvm::OptimizationLevel::O0;
    break;
  case 1:
    level = llvm::OptimizationLevel::O1;
    break;
  case 2:
    level = llvm::OptimizationLevel::O2;
    break;
  default:
    break;
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::StandardInstrumentations instrumentations(module.getContext(),
                                                  /*DebugLogging=*/false);
  instrumentations.registerCallbacks(callbacks, &mam);
  llvm::PipelineTuningOptions tuning;
  // No unrolling pass in the default pipeline; full unrolling added back
  // where the simplification pipeline runs it.
  tuning.LoopUnrolling = false;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning, std::nullopt, &callbacks);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  if (level.getSpeedupLevel() > 0)
    builder.registerLoopOptimizerEndEPCallback(
        [](llvm::LoopPassManager &loops, llvm::OptimizationLevel level) {
          loops.addPass(llvm::LoopFullUnrollPass(level.getSpeedupLevel()));
        });
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(level);
  passes.run(module, mam);
}

/// Adds `NAME_model_info` (and `main` when asked) to `module`.
static LogicalResult addModelInfo(llvm::Module &module, const ModelInfo &info,
                                  const CodegenOptions &options, Location loc) {
  MetadataBuilder b(module);
  llvm::SmallVector<llvm::Constant *> params;
  for (const ParamInfo &p : info.params)
    params.push_back(b.param(p));
  llvm::SmallVector<llvm::Constant *> entries;
  for (const EntryInfo &e : info.entries) {
    llvm::Function *fn = module.getFunction("_mlir_ciface_" + e.name);
    if (!fn)
      return emitError(loc) << "entry point '" << e.name
                            << "' has no C interface after lowering";
    entries.push_back(llvm::ConstantStruct::get(
        b.entryType(),
        {b.string(e.name), llvm::ConstantInt::get(b.i32, e.args.size()),
         b.tensors(e.args), llvm::ConstantInt::get(b.i32, e.results.size()),
         b.tensors(e.results), fn,
         llvm::ConstantInt::get(b.i64, e.arenaBytes, /*IsSigned=*/true),
         llvm::ConstantInt::get(b.i64, e.arenaBytesPerBatch,
                                /*IsSigned=*/true)}));
  }
  llvm::Constant *model = llvm::ConstantStruct::get(
      b.modelType(),
      {llvm::ConstantInt::get(b.i32, ATTN_ABI_VERSION), b.string(info.name),
       b.string(info.target),
       llvm::ConstantInt::get(b.i64, info.numParamElements),
       llvm::ConstantInt::get(b.i32, info.params.size()),
       b.array(b.paramType(), params, ".attn.params"),
       llvm::ConstantInt::get(b.i32, info.entries.size()),
       b.array(b.entryType(), entries, ".attn.entries"),
       llvm::ConstantInt::get(b.i64, info.kvCacheFloatsPerPosition),
       info.train ? b.train(*info.train)
                  : llvm::ConstantPointerNull::get(b.ptr),
       llvm::ConstantInt::get(b.i32, cudaChip(info.target) ? ATTN_DEVICE_CUDA
                                                           : ATTN_DEVICE_CPU),
       llvm::ConstantInt::get(b.i32, info.weightFormat),
       llvm::ConstantInt::get(b.i32, info.weightBlock),
       llvm::ConstantInt::get(b.i64, info.numWeightElements),
       llvm::ConstantInt::get(b.i64, info.numScaleElements),
       llvm::ConstantInt::get(b.i32, info.precision),
       llvm::ConstantInt::get(b.i32, info.int8RowBits),
       llvm::ConstantInt::get(b.i32, info.amxTiles)});
  auto *global = new llvm::GlobalVariable(module, b.modelType(), true,
                                          llvm::GlobalValue::ExternalLinkage,
                                          model, info.name + "_model_info");

  if (options.withMain) {
    // int main(int argc, char **argv) { return attn_main(argc, argv, &info); }
    auto *mainType = llvm::FunctionType::get(b.i32, {b.i32, b.ptr}, false);
    auto *runtimeMain =
        llvm::FunctionType::get(b.i32, {b.i32, b.ptr, b.ptr}, false);
    llvm::FunctionCallee attnMain =
        module.getOrInsertFunction("attn_main", runtimeMain);
    auto *mainFn = llvm::Function::Create(
        mainType, llvm::GlobalValue::ExternalLinkage, "main", module);
    llvm::IRBuilder<> ir(llvm::BasicBlock::Create(b.context, "entry", mainFn));
    llvm::Value *result =
        ir.CreateCall(attnMain, {mainFn->getArg(0), mainFn->getArg(1), global});
    ir.CreateRet(result);
  }
  return success();
}

std::unique_ptr<llvm::Module> translateToLLVMIR(ModuleOp module,
                                                const ModelInfo &info,
                                                const CodegenOptions &options,
                                                llvm::LLVMContext &context) {
  std::unique_ptr<llvm::Module> llvmModule;
  {
    StepTimer timer(options, "translate", "Translation to LLVM IR");
    llvmModule = translateModuleToLLVMIR(module, context, info.name);
  }
  if (!llvmModule)
    return nullptr;
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(options, error);
  if (!machine) {
    emitError(module.getLoc()) << "cannot create a target machine for '"
                               << options.target << "': " << error;
    return nullptr;
  }
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple());
  if (failed(addModelInfo(*llvmModule, info, options, module.getLoc())))
    return nullptr;
  // The runtime reaches the generated code only through NAME_model_info, so
  // everything else is internal: objects of several models link into one
  // program without clashing (each has its own `forward`).
  for (llvm::Function &fn : *llvmModule)
    if (!fn.isDeclaration() && fn.getName() != "main")
      fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  return llvmModule;
}

LogicalResult optimizeLLVMModule(llvm::Module &module,
                                 const CodegenOptions &options,
                                 std::string &error) {
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(options, error);
  if (!machine)
    return failure();
  StepTimer timer(options, "optimize", "LLVM optimisation pipeline");
  optimizeModule(module, *machine, options);
  return success();
}

LogicalResult emitMachineCode(llvm::Module &module,
                              const CodegenOptions &options, bool assembly,
                              llvm::raw_pwrite_stream &os, std::string &error) {
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(options, error);
  if (!machine)
    return failure();
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr,
                                   assembly
                                       ? llvm::CodeGenFileType::AssemblyFile
                                       : llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit this file type";
    return failure();
  }
  StepTimer timer(options, "codegen", "LLVM code generation");
  passes.run(module);
  return success();
}

} // namespace attn
