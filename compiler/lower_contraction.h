// Lowering a contraction kernel (compiler/contraction.h) to LLVM IR for tensor cores.
//
// The kernel is persistent: block b walks output tiles b, b + gridDim.x, ... of tile_m x
// tile_n elements of the last two dimensions (every other dimension of the space is a batch),
// in the config's raster order (compiler/config.h: ContractionConfig). For each tile:
//  1. Mainloop: the reduced extent in steps of tile_k. Each step's operand tiles go to shared
//     memory through a ring of `stages` buffers, `stages - 1` steps ahead of the math, with
//     cp.async 16-byte copies (zero-filled past the edges) when the operand's contiguous
//     extent is a multiple of 8 elements and its pointer is 16-byte aligned, else element by
//     element (the kernel checks at run time; the choice is uniform over the grid). Tiles are
//     stored as rows of 16-byte chunks, the chunk index XORed with the row so that the eight
//     rows one ldmatrix reads fall in distinct banks.
//  2. Math: each warp owns (tile_m / warps_m) x (tile_n / warps_n) of the tile as 16 x 8
//     accumulator fragments (f32); per 16 of the reduced extent it loads its operand
//     fragments with ldmatrix (.trans for an operand whose contiguous index is M or N) and
//     issues mma.sync.m16n8k16 (bf16 or f16 inputs, f32 accumulation). f32 operands cut to
//     tf32 (ContractionShape::tf32, K-major only) run the same on f32 tiles of the same bytes
//     (half the reduced indices), mma.sync m16n8k8 in tf32 per 8 of them and wgmma k8 below.
//     f32 operands not cut (ContractionShape::fma) run the mma.sync configs on CUDA cores:
//     each thread computes its fragments' accumulators with an FMA per product, reading the
//     operands from the same stages (`fma_math`).
//  3. Epilogue: at each output element it owns, a thread scales the sum (contraction.h's
//     scale), evaluates every statement of the kernel that reads it (bias, activation,
//     residual, casts, several outputs) and stores the outputs, with a bounds check. A tile
//     that lies wholly inside outputs of 16-byte aligned rows (`interior`) skips the checks,
//     and the lanes of each quad exchange their pairs of columns (butterfly shuffles) so that
//     each stores 16 contiguous bytes: stored as pairs, a warp wrote half of every sector it
//     touched, and at K = 256 the epilogue's partial writes held the L2 at 72% of its
//     throughput and the GEMM at 44% of cuBLAS (79% with 16-byte stores; 85% -> 91% at
//     8192 x 4096 x 4096; bench/results/2026-11-26-h200-epilogue-stores). A transcendental
//     epilogue keeps one copy, the checked one (its code is long already). With
//     `smem_epilogue` (warp-specialized images) each MMA warpgroup first writes its
//     accumulators to a buffer of its own, 32 columns at a time, and a loop reads them back
//     four consecutive columns a thread: the epilogue's code appears once instead of once per
//     accumulator (128 a thread), and the stores cover whole rows.
// On sm_90a a config with `wgmma` runs the math as Hopper's warpgroup MMA instead: each
// warpgroup (4 warps) owns 64 rows of the tile and issues wgmma.mma_async m64nNk16 reading
// both operands from shared memory through matrix descriptors, the tiles laid out as the
// 128-byte swizzle expects (K-major rows of 128 bytes; M/N-major operands as blocks of 64
// elements, read with the descriptor's transpose bit), with one group of MMAs in flight
// while the next stage's copies land. mma.sync runs on sm_80 and later.
// A config with `tma` is warp-specialized on sm_90a: a producer warpgroup copies the stages
// with TMA (cp.async.bulk.tensor, the hardware's 128-byte swizzle writing the layout above)
// and signals them full on mbarriers; two MMA warpgroups wait on those, issue the wgmmas and
// signal each stage empty once its MMAs are complete; no block-wide barrier in the mainloop,
// and the producer fills the next tile's stages during the epilogue. Without encoded tensor
// maps (a misaligned operand: the runtime's flag) the producer warpgroup copies as above.
// A `pingpong` config gives each MMA warpgroup whole tiles of its own, alternately (64 x 256:
// one wgmma per 16 of K; 128 x 128: two, one per 64-row slab): an ordering barrier lets one
// warpgroup's mainloop start when the other's has waited for its last stage, so that the
// tensor cores run one tile's MMAs while the other warpgroup stores the tile before. Its images
// without wgmma run the tile as 2 x 4 warps of mma.sync.
#pragma once

#include <string>

#include "bundle/manifest.h"
#include "compiler/codegen.h"
#include "compiler/config.h"
#include "compiler/schedule.h"

namespace kiln {

/// The tensor maps the entry of a `cfg.tma` config takes (bundle/manifest.h), A's then B's:
/// each operand's whole tensor (`abi` parameter), its box 64 elements (128 bytes, the swizzle)
/// along the contiguous index, the tile's extent along the other contracted index (tile_m or
/// tile_n rows of a K-major operand, tile_k rows of the others, whose tile is then copied as
/// tile / 64 boxes) and 1 along batch indices; then, with a TMA store
/// (contraction_store_param), the output's: 128 bytes of columns, 64 rows, 1 along batch
/// indices, `store` set. Empty for other configs.
std::vector<bundle::TensorMapInfo> contraction_tensor_maps(const KernelDef& abi,
                                                           const ScheduledKernel& sk,
                                                           const ContractionConfig& cfg);

/// The `abi` parameter a `cfg.tma_store` config stores through a tensor map (config.h): the
/// kernel's one output, of bf16, f16 or f32 elements, at most 5 dimensions, tile_n a multiple
/// of 128 bytes of it; -1 when there is none (other configs, several outputs), and the
/// config stores as without tma_store.
int contraction_store_param(const KernelDef& abi, const ScheduledKernel& sk,
                            const ContractionConfig& cfg);

/// Whether the contraction kernel `sk` of a schedule of `abi`, as a dependent launch
/// (codegen.h make_dependent, sm_90 and later), waits for the kernel before it only before
/// each tile's epilogue: its operands are the spec's inputs, which no earlier step writes, so
/// it copies and multiplies its first tiles while that kernel ends. Otherwise it waits at its
/// start, as every other kernel does.
bool contraction_defers_wait(const KernelDef& abi, const ScheduledKernel& sk);

/// The registers the block of `cfg`'s warp-specialized image (a `tma` config on sm_90a) must be
/// allocated: its producer warpgroup gives registers up with setmaxnreg and its MMA warpgroups
/// take them; setmaxnreg.inc waits until the block's pool holds them, so a smaller allocation
/// would hang (compile.cpp refuses such an image).
int specialized_register_pool(const ContractionConfig& cfg);

/// Adds to `m` the kernel `entry` computing `sk` (a contraction kernel of a schedule of `abi`)
/// with `cfg`. Its parameters are `abi`'s (bundle/manifest.h); it needs cfg.smem_bytes() of
/// dynamic shared memory. Sets *layout (when given): it reads nothing with a required
/// alignment (misaligned operands take the element-by-element copies).
/// `arch` picks the math: wgmma for a config with `wgmma` on sm_90a, mma.sync otherwise.
/// `fast_functions`: the epilogue's tanh and erf run on approximations (StepPlan::fast_functions).
void lower_contraction(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                       const ContractionConfig& cfg, bool fast_functions, const std::string& arch,
                       const std::string& entry, VariantLayout* layout);

}  // namespace kiln
