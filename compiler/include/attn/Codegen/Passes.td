//===- Passes.td - Code generation passes of attnc ---------*- tablegen -*-===//
//
// The passes between linalg on tensors and the LLVM dialect that make the
// loops fast: fusion and buffer planning, register-tiled matrix products,
// vectorised linalg ops, polynomial math, vector lowering, and parallel
// loops on the runtime's thread pool (CPU) or kernels (GPU). Each is a plain
// pass over `func.func` or the module, so that lit tests can run it alone.
// The CPU passes that make cost decisions take the vector target as options
// and read every size and threshold from `CpuCostModel` (CpuCostModel.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CODEGEN_PASSES_TD
#define ATTN_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

// The vector target of a pass that consumes the CPU cost model; the
// pipeline sets them from `attnc --target` (vectorTargetFor).
defvar LanesOption = Option<"lanes", "lanes", "int64_t", /*default=*/"16",
                            "f32 lanes per vector register">;
defvar RegistersOption = Option<"registers", "registers", "int64_t",
                                /*default=*/"32", "vector registers">;

def AttnFuseElementwise
    : Pass<"attn-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuses single-use element-wise linalg.generic producers into "
                "their consumers, without broadcasts or reshape propagation";
  let description = [{
    Input: linalg on tensors. A single-use element-wise generic read element
    for element (no broadcast) by another generic is fused into it. Reshapes
    are not propagated (the products stay 2-D matmuls). Output: the same
    values with fewer generics.
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect"];
}

def AttnGroupMatmulEpilogues
    : Pass<"attn-group-matmul-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Moves matrix products next to their zero fill and "
                "element-wise epilogue, and marks the epilogues "
                "attn-matmul-to-vector fuses";
  let description = [{
    Input: linalg on buffers, before the temporaries are planned. A matrix
    product moves next to the zero fill of its result and to the
    element-wise op reading it (marked `attn.matmul_epilogue`), which
    `attn-matmul-to-vector` then folds into its kernel; a copy of a buffer
    that only a fill writes becomes that fill. Output: the same memory
    effects in an order the kernel can fuse.
  }];
}

def AttnReuseBuffers : Pass<"attn-reuse-buffers", "::mlir::func::FuncOp"> {
  let summary = "Lets temporaries of the same type and sizes with disjoint "
                "lifetimes share one allocation";
  let description = [{
    Input: a function on buffers. Temporaries of one type and the same
    dynamic sizes whose lifetimes (alloc to dealloc in one block) do not
    overlap share one allocation. Output: fewer allocations, so that a
    forward pass mallocs (and the kernel zero-fills) a few buffers instead
    of one per intermediate tensor.
  }];
}

def AttnPlanArena : Pass<"attn-plan-arena", "::mlir::func::FuncOp"> {
  let summary = "Places the temporaries of a function in one arena (the "
                "caller's when it passes one large enough), at offsets "
                "planned from their lifetimes";
  let description = [{
    Input: a function on buffers. The temporaries left local to an entry
    point live in one arena, at offsets planned at compile time from their
    lifetimes (first fit over slots); sizes that depend on the call's dims
    are computed at the function's entry. The arena is the function's
    argument marked `attn.arena` when it is large enough and 64-byte
    aligned, else one allocated for the call; the bytes needed are stored
    into the argument marked `attn.arena_need`. Without those arguments the
    arena is allocated at every call. Output: the temporaries as
    `memref.view`s of the arena, the arena attributes removed.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnComposeEntryCalls
    : Pass<"attn-compose-entry-calls", "::mlir::ModuleOp"> {
  let summary = "Puts back, on buffers, the call of one entry point by "
                "another that attn-bind-params recorded";
  let description = [{
    Input: a bufferised module whose entry points may carry
    `attn.entry_call` (Passes.h, `kEntryCallAttr`). The recorded call is put
    back at the top of the caller, its results replacing the caller's
    arguments marked `attn.entry_call_result`, the arena passed on as well.
    Output: entry points calling each other on buffers.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AttnMatmulToVector : Pass<"attn-matmul-to-vector", "::mlir::ModuleOp"> {
  let summary = "Packed, register-tiled vector loops for 2-D f32 matrix "
                "products on buffers";
  let description = [{
    Input: linalg on buffers. Every 2-D f32 matrix product (`linalg.matmul`,
    also with a transposed A or B through its indexing maps, or a
    `linalg.generic` with the same contraction) becomes a call of a blocked
    loop nest (with `precision=bf16 amx=tiles`, on AMX tiles): blocks of B packed into an aligned buffer with B^T
    transposed on the way, and a register tile of vector accumulators
    updated with `vector.fma` per k; the rows left over below the tile run
    2-row tiles, then a 1-row tile, the columns past N are masked. With
    few rows (below 8, or 6 with 16 registers), dot products along K for
    B stored [N, K], scaled rows of B for B stored [K, N] instead. A zero fill
    before the product and an epilogue marked by
    `attn-group-matmul-epilogues` after it are folded into the kernel. The
    loop nest is one internal function per module and kind of product
    (`__attn_sgemm_nt_16x32`, ...); large products call it through the
    runtime's thread pool. Sizes and thresholds come from `CpuCostModel`.
  }];
  let options = [
    LanesOption, RegistersOption,
    Option<"threads", "threads", "bool", /*default=*/"true",
           "Split large products over the runtime's thread pool "
           "(attn_parallel_for)">,
    Option<"precision", "precision", "std::string", /*default=*/"\"f32\"",
           "f32, or bf16: the packed kernel's operands rounded to bf16 and "
           "multiplied by vdpbf16ps with f32 accumulation (needs "
           "AVX512-BF16 and 16 lanes)">,
    Option<"l2Bytes", "l2-bytes", "int64_t", /*default=*/"1048576",
           "L2 cache bytes per core, which the packed blocks of B follow "
           "(CpuCostModel)">,
    Option<"fmaUnits", "fma-units", "int64_t", /*default=*/"1",
           "512-bit FMAs a core starts per cycle (2: Intel server cores), "
           "which widens the f32 register tile to 6 x 4 vectors "
           "(CpuCostModel)">,
    Option<"int16Dot", "int16-dot", "bool", /*default=*/"false",
           "The target has AVX512-VNNI's vpdpwssd: a single row times int8 "
           "weights is rounded to int16 and multiplied on integers"
           " (needs 16 lanes)">,
    Option<"amx", "amx", "std::string", /*default=*/"\"off\"",
           "With bf16 precision: off (vdpbf16ps on vector registers), tiles "
           "(AMX tiles, tdpbf16ps; needs AMX-BF16) or emulate (the AMX "
           "kernel with each tile instruction done by AVX512-BF16 "
           "instructions)">
  ];
  let dependentDialects = ["::mlir::amx::AMXDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnVectorizeLinalg
    : Pass<"attn-vectorize-linalg", "::mlir::func::FuncOp"> {
  let summary = "Tiles linalg ops on buffers to one vector along the "
                "innermost loop and vectorises them";
  let description = [{
    Input: linalg on buffers (matrix products already taken by
    `attn-matmul-to-vector`). Every other linalg op is tiled to one vector
    along its innermost loop (all other loops to 1) and vectorised, masked
    where the innermost size is dynamic or not a multiple; ops the
    vectoriser cannot take are left for `convert-linalg-to-loops`. Vector
    sizes come from `CpuCostModel`.
  }];
  let options = [LanesOption, RegistersOption];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnMathApproximation
    : Pass<"attn-math-approximation", "::mlir::func::FuncOp"> {
  let summary = "Replaces f32 exp, tanh, erf, ... with polynomial "
                "approximations";
  let description = [{
    Input: any function. exp, tanh, erf (and the other functions MLIR
    approximates) on f32 become polynomials, so they vectorise and never
    call libm per element.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnLowerVector : Pass<"attn-lower-vector", "::mlir::func::FuncOp"> {
  let summary = "Lowers the vectorised code's vector ops to 1-D vector ops";
  let description = [{
    Input: the vector ops `attn-matmul-to-vector` and
    `attn-vectorize-linalg` create. Progressive lowering of masks,
    transfers, multi-reductions, transposes, contractions and broadcasts.
    Output: 1-D vector ops that convert-vector-to-llvm takes as they are.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnLowerDynamicReshapes
    : Pass<"attn-lower-dynamic-reshapes", "::mlir::func::FuncOp"> {
  let summary = "Rewrites memref.expand_shape ops that split a dynamic dim "
                "into dynamic dims as memref.reinterpret_cast";
  let description = [{
    Input: any function on buffers. memref.expand_shape ops splitting a
    dynamic dim into several dynamic dims become memref.reinterpret_cast
    (MLIR 22's expand-strided-metadata crashes on them).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AttnParallelizeLoops
    : Pass<"attn-parallelize-loops", "::mlir::ModuleOp"> {
  let summary = "Runs independent outermost scf.for loops on the runtime's "
                "thread pool (attn_parallel_for)";
  let description = [{
    Input: entry points as loops on buffers. An outermost scf.for of an
    entry point (or a perfect nest of two, flattened) whose iterations
    provably touch disjoint memory is outlined into a task run by the
    runtime's `attn_parallel_for_sized(n, work, min_work, task, arg)` on the
    calling context's pool; other outermost loops are outlined and called
    directly. The minimum work comes from `CpuCostModel`. Output: entry
    points of glue and calls (marked `noinline optnone` when no loop is
    left), tasks of equal bodies merged.
  }];
  let options = [LanesOption, RegistersOption];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnGpuMapLoops : Pass<"attn-gpu-map-loops", "::mlir::func::FuncOp"> {
  let summary = "Splits functions into host code and kernels: device "
                "buffers, parallel loops mapped to blocks and threads";
  let description = [{
    Input (GPU target): linalg lowered to `scf.parallel` loops on buffers.
    Every buffer not passed in host memory lives on the device (host
    allocations become `gpu.alloc`, copies parallel loops); each outermost
    parallel loop becomes one kernel (its loops collapsed and tiled into
    blocks of threads, marked for `convert-parallel-loops-to-gpu`); other
    host ops that touch device memory run on one GPU thread, and host reads
    of device values are copied back to the host.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnGpuTensorCoreProducts
    : Pass<"attn-gpu-tensor-core-products", "::mlir::func::FuncOp"> {
  let summary = "Matrix products as kernels of warp-level 16x8 tiles for "
                "the tensor cores (GPU target, --precision tf32)";
  let description = [{
    Input: linalg on buffers (GPU target). Each f32 matrix product
    C += A B (A [M, K] or [K, M], B [K, N] or [N, K]; or a batch of them)
    becomes one parallel loop over 64x64 blocks of C and each block's
    (lane, warp n, warp m) threads, named by `attn.warp_tiles`. Over K in
    steps of 32 the block's threads copy its rows of A and columns of B
    into shared tiles (GpuSharedTiles.h) and each warp adds its 32x32 tile's
    `vector.contract`s of 16x8x8 fragments read from them with
    `vector.transfer_read`, 8 terms at a time; the rows and columns no
    whole block covers and the last K mod 32 terms stay linalg products on
    views.
    attn-gpu-map-loops maps the two loops to blocks and threads;
    attn-gpu-mma-sync makes the contractions mma.sync.
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnGpuSimtProducts
    : Pass<"attn-gpu-simt-products", "::mlir::func::FuncOp"> {
  let summary = "f32 matrix products as kernels of 8x8 or 4x4 tiles of C "
                "per thread (GPU target, --precision f32)";
  let description = [{
    Input: linalg on buffers (GPU target). Each f32 matrix product
    C += A B (A [M, K] or [K, M], B [K, N] or [N, K]; or a batch of them)
    becomes one parallel loop over 128x128 blocks of C and each block's
    16 x 16 threads, named by `attn.thread_tiles`, whose threads each keep
    an 8 x 8 tile of C (rows 8 y + i, columns 8 x + j) in registers; the
    products on views it leaves, and the products with fewer than 128 rows
    or columns, then get kernels of 64x64 blocks the same way (4 x 4 per
    thread). Over K in steps of 32 the block's threads copy its rows of A
    and columns of B into shared tiles held term by term
    (GpuSharedTiles.h), and each thread reads its rows and columns of a
    term as vectors of 4 and adds them (multiply-adds that may contract);
    the rows and columns no whole block of 64 covers and the last K mod 32
    terms stay linalg products on views.
    attn-gpu-map-loops maps the loop to blocks and threads as it stands.
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnGpuFewRowProducts
    : Pass<"attn-gpu-few-row-products", "::mlir::func::FuncOp"> {
  let summary = "Products of few rows (decoding) as a warp per element of "
                "C (GPU target)";
  let description = [{
    Input: linalg on buffers (GPU target). A 2-D f32 product
    C[M, N] += A[M, K] * B[N, K] gets a branch on M: at most 16 rows (a
    decoding step's) run as one parallel loop over (m, n, lane), written
    for a warp's `gpu.subgroup_size` lanes (attn-gpu-warp-lanes fixes the
    count): lane c sums A[m, k] B[n, k] over k = c, c + L, ..., the lanes'
    sums combine by XOR shuffles, and lane 0 adds the total to C[m, n]
    (stores it, when a zero fill of C came right before the product: the
    fill then stays in the other way). A warp reads consecutive elements
    of a row of B, and the loop over C's elements is one kernel that the
    bias, activation or residual after it joins. More rows run the
    product as it was.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnGpuMmaSync : Pass<"attn-gpu-mma-sync", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Warp-level vector contractions to nvgpu.mma.sync, f32 "
                "operands as TF32";
  let description = [{
    Input: kernels whose warp-level code attn-gpu-tensor-core-products
    wrote. convert-vector-to-gpu's nvgpu lowering splits each fragment's
    reads, contraction and writes between the warp's lanes (by
    `gpu.lane_id`); f32 `nvgpu.mma.sync` ops are marked `tf32Enabled`. A
    contraction that does not convert is an error (it would run whole in
    every lane).
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnGpuSharedTiles
    : Pass<"attn-gpu-shared-tiles", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Puts the tiles a kernel's block shares in the GPU's shared "
                "memory";
  let description = [{
    Input: outlined kernels. A tiled kernel's tile that its block's threads
    share (a `memref.alloca` marked `attn.shared_tile`, GpuSharedTiles.h)
    becomes a workgroup attribution of its `gpu.func` (shared memory, one
    per block, 16-byte aligned), cast to the alloca's type where the alloca
    was. Each block copy (`scf.for` marked `attn.block_copy`, from the
    thread's index in the block in steps of the block's thread count) gets
    a loop of constant trip count, which LLVM unrolls. In a kernel with
    barriers marked `attn.await_copies = N` (one that copies the next
    stage's terms while it reads this one's), each block copy that loads
    an element or a vector and stores it into a tile becomes
    `nvgpu.device_async_copy`s (cp.async), every block copy is followed by
    `nvvm.cp.async.commit.group`, and each such barrier is preceded by
    `nvvm.cp.async.wait.group N`.
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnGpuElideHostWaits
    : Pass<"attn-gpu-elide-host-waits", "::mlir::func::FuncOp"> {
  let summary = "Drops the host's waits for the device that no host access "
                "follows";
  let description = [{
    Input: host code after `gpu-async-region`, which makes the host wait
    (`gpu.wait` without a result) at the end of every block that queued
    device work and before every host op with memory effects, an `scf.if`
    around a product's two ways included. The runtime queues all device
    work on one in-order stream, so the host needs to wait only before it
    reads, writes or frees memory that device work uses (a kernel's buffer,
    either end of a copy), before an op whose effects are unknown (a call)
    and before it returns. A wait is dropped when every path after it
    (through the ends of the regions around it, around a loop and out of
    it) meets queued device work or another wait first.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def AttnGpuWarpLanes : Pass<"attn-gpu-warp-lanes", "::mlir::func::FuncOp"> {
  let summary = "Fixes the lane count of loops written for a warp's lanes";
  let description = [{
    Loops written for the lanes of a warp (`convert-attn-to-linalg`'s
    `warp-norms`) take their lane count from `gpu.subgroup_size` and
    combine the lanes' values by `gpu.shuffle xor` across the subgroup.
    This pass gives the count its value, `lanes`, and settles each such
    shuffle: one from a lane within the count is valid, one from past it
    returns the lane's own value, invalid.
    - 32 (the GPU target): every shuffle of a 32-lane butterfly is valid
      and stays for the GPU. attn-gpu-map-loops puts the lanes, the
      innermost dimension of their loop, in consecutive threads: a warp
      each, since the loop's size is a multiple of 32 and its blocks are
      too.
    - 1 (`cuda-on-host`): one lane walks the whole row and every shuffle
      is invalid (the butterfly adds nothing), so the CPU runs the loops as
      written.
    Fails with a diagnostic on any other count, and on a shuffle across the
    subgroup that is not XOR by a constant.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"32",
           "Lanes of a warp: 32, or 1 to run the loops on the host">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def AttnGpuLibdeviceIntrinsics
    : Pass<"attn-gpu-libdevice-intrinsics", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Defines the libdevice functions a kernel calls from LLVM "
                "intrinsics";
  let description = [{
    Input: a GPU module after `convert-gpu-to-nvvm`, which turns the math
    ops the polynomial approximations leave (fma, floor, sqrt, rsqrt, ...)
    into calls of libdevice's `__nv_*` functions. MLIR links libdevice when
    it finds a CUDA toolkit (CUDA_HOME and the like) while it serialises the
    module; without one the PTX keeps the calls unresolved, and the
    driver's JIT compiler rejects it on the GPU. This pass gives each such
    declaration a body of one LLVM intrinsic (or, for rsqrt, a division by
    the square root: IEEE, as the CPU build), which NVPTX emits as an
    instruction and which is inlined, so the PTX is the same with or
    without a toolkit. Fails with a diagnostic naming a function it has no
    body for.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def AttnGpuLoopsOnHost : Pass<"attn-gpu-loops-on-host", "::mlir::func::FuncOp"> {
  let summary = "Runs the GPU mapping's loops on the host (for tests)";
  let description = [{
    Input: the output of `attn-gpu-map-loops`. Device allocations, frees and
    copies become host ones (`memref.alloc`, `memref.dealloc`,
    `memref.copy`); the parallel loops mapped to blocks and threads are left
    for the CPU's lowering, which runs them in order (a kernel written per
    warp, `attn.warp_tiles`, with one lane: its body does the whole warp's
    work). A tile a block shares (GpuSharedTiles.h) is allocated once
    before its kernel, each of its block copies runs whole in every
    thread's iteration, and the barriers go: a thread runs its whole body
    before the next starts, so it must fill the tiles it reads itself. The
    target
    `cuda-on-host` compiles a model this way, so that the GPU target's loop
    structure (what runs where, in which order, reading which buffers) is
    checked numerically on any machine; the kernels' own code generation
    (NVVM, PTX) is not.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // ATTN_CODEGEN_PASSES_TD
