// Configuration spaces: the knobs of each kernel kind. Every point is compiled as a separate
// variant; the autotuner picks among them and the heuristic default is used until it has.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// A configuration's text form, as tools print it and the tuner logs it: "block=256 vec=4".
std::string config_text(const std::map<std::string, int64_t>& config);

/// A pointwise step: each thread handles `unroll` vectors of `vec` consecutive elements per
/// grid-stride iteration, the vectors of one block interleaved so that a warp's accesses are
/// contiguous; a block covers block * vec * unroll elements.
///
/// A tiled pointwise step (one whose loads disagree with its output on the contiguous index:
/// PointwiseStep::tiling, compiler/plan.h) walks tiles of tile_in x tile_out elements of the
/// plane of two variables: the one the tiled loads hold contiguous (tile_in elements of it)
/// and the output's innermost one (tile_out elements). Each thread loads vec x vec blocks of
/// the tile, `vec` vectors of `vec` elements along the input's contiguous index, into shared
/// memory, and after a barrier stores vectors of `vec` elements along the output's; `unroll`
/// is 1 and not a knob. tile_in and tile_out are powers of two, multiples of vec, and the
/// tile's (tile_in / vec) x (tile_out / vec) blocks are a multiple of `block`.
struct PointwiseConfig {
  int block = 256;   // threads per block
  int vec = 1;       // elements per thread per access (1 = scalar code, no alignment needed)
  int unroll = 1;    // independent vectors in flight per thread
  int tile_in = 0;   // tiled: the tile's extent along the tiled loads' contiguous index; 0: flat
  int tile_out = 0;  // tiled: the tile's extent along the output's contiguous index
  // Reads the kernel's strided inputs through the strides passed at launch (scalar loads,
  // 64-bit offsets): the step's strided variant (kernel_plan.h). Others assume contiguous ones.
  bool strided = false;

  bool tiled() const { return tile_in > 0; }
  int64_t elements_per_block() const {
    return tiled() ? int64_t{tile_in} * tile_out : int64_t{block} * vec * unroll;
  }
  std::map<std::string, int64_t> as_map() const;
  friend bool operator==(const PointwiseConfig&, const PointwiseConfig&) = default;
};

/// All configurations for a step whose widest useful vector is `max_vec` elements (16 bytes
/// of its narrowest contiguous tensor). Scalar variants are always present: they are the
/// fallback for pointers that are not 16-byte aligned.
std::vector<PointwiseConfig> pointwise_config_space(int max_vec);

/// The heuristic default: 128 threads, full vectors, two vectors in flight, gathers included.
/// Gathers had four (6-9% faster for embedding lookups, bench/results/2026-11-24-h200-shapes,
/// when their kernels held every index form); with the own entries' fast form alone and
/// whole-program assembly, two were faster on an H200 for 4 of 5 gathers (embedding 128K x
/// 4096 bf16 498.7 against 515.1 us, rotary bf16 81.8 against 83.7, a hashed gather 188.0
/// against 198.4; rotary f32 the exception, 182.2 against 170.6:
/// bench/results/2026-11-27-h200-philox, call 2).
PointwiseConfig default_pointwise_config(int max_vec);

/// Steps whose estimated work (compiler/plan.h: pointwise_work_per_byte) is at least this
/// many instructions per byte run heavy_pointwise_config on launches of at least
/// kHeavyMinElementsPerSm elements per SM, default_pointwise_config below that.
inline constexpr double kHeavyWorkPerByte = 5;
inline constexpr int64_t kHeavyMinElementsPerSm = 128 * 1024;

/// Four vectors in flight per thread of 128: a thread that spends long on arithmetic between
/// its loads keeps more bytes in flight. Measured on an H200 (bench/results/2026-11-27-h200-
/// ahead), against two at 16384 x 8192 (call 1): dropout bf16 145.3 -> 138.9 us, its backward
/// 145.1 -> 138.6, bias + erf-GELU bf16 189.3 -> 181.7 (estimated 7.2, 7.2 and 7.8
/// instructions a byte; Nsight Compute counted 5.9 and 9.2 executed, call 2); slower for every
/// step estimated under 5 (dropout f32 255.9 -> 262.6 at 3.4, executed 3.6; bias + tanh-GELU
/// bf16 130.3 -> 131.7 at 4.0, executed 4.2; silu * b, tanh f32, add, a cast: 1-3%). By size
/// (call 2, three heavy steps): four are level at 16M elements (124K an SM of 132), 1.5-4%
/// faster from 32M, 0-4% slower at 8M and 3-6% at 4M.
PointwiseConfig heavy_pointwise_config(int max_vec);

/// The static shared memory a kernel may declare (tiled steps' tiles: tiled_config_space, and
/// compiler/plan.h Tiling::shifts).
inline constexpr int64_t kStaticSmemBytes = 48 * 1024;

/// The tiled configurations of a step whose widest vector is `max_vec` elements and whose
/// tiled loads take `smem_bytes_per_element` bytes of shared memory per tile element (the sum
/// of their element sizes): full vectors first, then scalar ones (the fallback for pointers
/// that are not 16-byte aligned); none uses more than kStaticSmemBytes (the 64 x 64
/// default fits when smem_bytes_per_element <= 12: compiler/plan.h tiles no more).
std::vector<PointwiseConfig> tiled_config_space(int max_vec, int smem_bytes_per_element);

/// The heuristic default of a tiled step: square tiles of 16 x vec (at least 64) on a side,
/// halved until they fit the static shared memory at `smem_bytes_per_element`, full vectors,
/// 16 vectors per thread on at least 64 threads: 64 x 64 on 64 threads for f32, 128 x 128 on
/// 128 threads for bf16 and f16.
PointwiseConfig default_tiled_config(int max_vec, int smem_bytes_per_element);

/// A reduction kernel (compiler/lower_reduction.h).
/// Row reduction: `group` threads share a row (a power of two, 1..1024; several rows per warp
/// below 32), a block holds block / group rows, and each thread keeps `items` vectors of `vec`
/// elements of its row on chip. A row of at most capacity() elements is read once
/// (persistent); a longer one is walked in chunks of that size, once per phase (looped).
/// A split row reduction (`split`, group == block) spreads each row over several blocks, each
/// walking a contiguous slice of it in chunks of capacity(), and runs once per phase: partial
/// results go through a workspace and are combined in the next phase (few, very long rows).
/// A fused row reduction (`fuse`, not split) computes, on rows that loop, a sum or a variance
/// that follows a max or a mean in the pass of that max or mean (online max+sum, Welford:
/// compiler/reduction_analysis.cpp); only kernels with such a pattern get fused variants.
/// A staging row reduction (`stage`) also keeps, in dynamic shared memory, the packed vectors
/// of the row's inputs that later passes read again: the first pass that reads them from
/// global memory stores them, later passes read them back (rows too long for registers that
/// fit on chip; the kernel checks the launch's dynamic shared memory, bundle/manifest.h).
/// Outer reduction: block / group threads along the rows each own `vec` consecutive rows (the
/// contiguous index), `group` threads share them along the reduced index, and each has
/// `items` steps of the reduced index in flight. A split outer reduction (`split`) spreads
/// the reduced extent of a block's rows over several blocks, in chunks of group x items, with
/// phases and a workspace as split rows have (few rows, e.g. column sums of 8192 columns).
struct ReductionConfig {
  int block = 256;
  int group = 256;
  int vec = 1;
  int items = 1;
  bool split = false;    // several blocks per row (row reductions: needs group == block)
  bool fuse = false;     // row reductions only, not split: looped rows fuse (see above)
  bool stage = false;    // row reductions only: long rows staged in dynamic shared memory
  bool strided = false;  // reads strided inputs through their strides (PointwiseConfig)
  // Row reductions only, vec > 1, neither split nor staged: rows of at least 2 x vec elements
  // take vectors from each row's first element at a multiple of vec in memory, with a scalar
  // head and tail (compiler/lower/reduction_rows.cpp). The twin of a tier that the rule runs
  // for rows whose length is not a multiple of vec (row_shift_twin).
  bool shift = false;
  // Outer reductions only, vec 1, not split: each thread loads the next chunk's elements
  // before it sums the chunk loaded the iteration before (compiler/lower/reduction_outer.cpp),
  // so that a chunk's `items` loads are in flight together whatever order ptxas gives them.
  bool prefetch = false;

  int64_t capacity() const { return int64_t{group} * vec * items; }
  std::map<std::string, int64_t> as_map() const;
  friend bool operator==(const ReductionConfig&, const ReductionConfig&) = default;
};

/// Row reductions: the heuristic's tiers (one row per 8 .. 64 threads with 16 elements per
/// thread, then 64 .. 512 threads with 32, or spread; see row_heuristic_limit), variants with other
/// splits, scalar variants for pointers that are not 16-byte aligned, the split variants,
/// and, for a kernel whose looped rows can fuse (`fusable`), a fused copy of every variant
/// that is not split, after all the others (the unfused variants keep their places).
std::vector<ReductionConfig> row_reduction_space(int max_vec, bool fusable = false);
/// How the heuristic runs the rows that loop (longer than the largest tier) of a kernel whose
/// looped rows fuse (StepPlan::looped_fusion): unfused (`none`); on the fused copy of the
/// largest tier (`largest`: two-pass rows whose fusions are online max+sum over elements of
/// 4 bytes or more, f32 softmax); or on that and, from kManyRowsPerSm rows per SM, the fused
/// 128-thread tier (`many`: rows that fusing leaves one pass, mean+variance, logsumexp).
enum class LoopedFusion { none, largest, many };
/// The heuristic picks, for a row of R elements, the tier with the smallest limit >= R (the
/// largest tier when none): a config's limit, or 0 when it is not a tier. Rows longer than
/// the largest tier loop; unless `looped` is none, the fused copy of the largest tier is the
/// tier for every longer row (limit INT64_MAX), and with `many` the fused copy of the
/// 128-thread tier too (row_many_rows_per_sm); shorter rows, which stay on chip and never
/// fuse, keep the unfused tiers. With `spread` (StepPlan::spread_tiers) the tiers of 2048 ..
/// 8192 are 128 .. 512 threads with 16 elements each, not 64 .. 256 with 32.
int64_t row_heuristic_limit(const ReductionConfig& c, int max_vec,
                            LoopedFusion looped = LoopedFusion::none, bool spread = false);
/// The rows per SM from which a tier replaces the others of its limit (bundle/rule.h), or 0:
/// the fused 128-thread tier of LoopedFusion::many, from kManyRowsPerSm rows per SM.
int64_t row_many_rows_per_sm(const ReductionConfig& c, int max_vec, LoopedFusion looped);
inline constexpr int64_t kManyRowsPerSm = 8;
/// The split variants of a row reduction: the heuristic runs the first for few, very long
/// rows (runtime/runtime.cpp); the others are for the tuner.
std::vector<ReductionConfig> split_row_configs(int max_vec);
/// A row reduction's tiled strided variants (compiler/kernel_plan.cpp strided_configs): 256
/// threads for rows of up to this many elements, 512 for longer ones.
inline constexpr int64_t kTileShortRows = 2048;
/// The blocks an SM that a tiled strided variant's registers are capped for (PTX
/// .minnctapersm): 1024 threads an SM for blocks of 512 threads or more, else 0 (no cap).
/// Measured on an H200 (bench/results/2026-11-26-h200-strided-tile, call 5): uncapped, the
/// 512-thread tile took 78 registers, one block an SM.
int tile_blocks_per_sm(const ReductionConfig& c);
/// The staging variants of a row reduction (one row per block, full vectors), which the
/// compiler adds after the row space for kernels whose looped rows are read by two passes or
/// more. Only the tuner or an explicit choice runs them (slower than the looped tiers on an
/// H200: docs/architecture.md).
std::vector<ReductionConfig> staged_row_configs(int max_vec);
/// The shifting twin of row config `c` (ReductionConfig::shift), or nullopt when it has none:
/// every heuristic tier (row_heuristic_limit > 0) with vec > 1 has one.
std::optional<ReductionConfig> row_shift_twin(const ReductionConfig& c, int max_vec,
                                              LoopedFusion looped, bool spread = false);
/// The variant that replaces heuristic tier `c` (unfused, 64+ threads a row: rows of 1024
/// elements or more) on few rows, at most one block per SM (bundle/rule.h), in a kernel whose
/// element stores read an input that is the same for every row (a norm's weight:
/// reduction::row_invariant_loads); nullopt where the tier stays. One row per block: the
/// widest block of up to 512 threads that gives every thread a vector of the tier's longest
/// row, with the fewest items of the row space's configs of that block that hold the row.
std::optional<ReductionConfig> row_few_rows_config(const ReductionConfig& c, int max_vec);
/// The default when the row length is unknown: 256 threads per row, 32 elements each.
ReductionConfig default_row_config(int max_vec);

/// Outer reductions: 64-column blocks and their neighbours, then the split variants (the
/// heuristic runs the first, or the narrow one for fewer columns than its tile, or the deep
/// one for those columns over a long reduced extent, when the tiles are fewer than the SMs:
/// bundle/rule.h).
std::vector<ReductionConfig> outer_reduction_space(int max_vec);
/// 32 threads along the rows with 8 bytes of them each, 8 along the reduced index, 4 steps in
/// flight.
ReductionConfig default_outer_config(int max_vec);
/// The first split variant: 32 threads along the rows with 16 bytes of them each, 8 along the
/// reduced index, 4 steps in flight.
ReductionConfig default_outer_split_config(int max_vec);
/// The split variant for few columns: 8 threads along the rows with 16 bytes each, 16 along
/// the reduced index with 8 steps in flight.
ReductionConfig narrow_outer_split_config(int max_vec);
/// The narrow split with 16 steps in flight, for long reduced extents.
ReductionConfig deep_outer_split_config(int max_vec);
/// The deep split's blocks with 4, then 2 threads along the rows (tiles of 32 and 16 bf16
/// columns, 16 and 8 f32): for columns that fill at most half of one of these tiles, up to 16
/// bf16 or 8 f32 (bundle/rule.h StepRule::fitted_splits).
std::vector<ReductionConfig> fitted_outer_split_configs(int max_vec);
/// Scalar loads with 8 steps in flight, prefetched a chunk ahead (ReductionConfig::prefetch):
/// 32 columns over blocks of 256 threads (8 along the reduced index), then of 128 (4).
std::vector<ReductionConfig> prefetching_outer_configs();
/// The unsplit variants for short columns (bundle/rule.h kShortOuterMaxReduced): 32 threads
/// along the reduced index over 32 columns of scalars, then 16 over 32 vectors of 8 bytes
/// (for columns too many for the first's tiles to be fewer than the SMs).
std::vector<ReductionConfig> short_outer_configs(int max_vec);
/// The split for few short columns (bundle/rule.h kShortSplitMaxReduced): the default's
/// blocks (8 threads along the reduced index, chunks of 32 rows), split.
ReductionConfig short_outer_split_config(int max_vec);

/// A scan kernel (compiler/lower_scan.h).
/// Along the contiguous index (a row scan): `group` threads share a row (32: a warp per row; a
/// power of two up to 1024), a block holds block / group rows, and the row is walked in chunks
/// of group * vec elements, each thread taking `vec` consecutive elements of a chunk (one
/// vector load); a chunk is scanned in registers, across the warp with shuffles and across the
/// warps through shared memory, and its total carries into the next chunk. A split row scan
/// (`split`, group == block) spreads each row over several blocks in two phases (the totals
/// of the slices, then the slices scanned from the sum of the totals before them).
/// Along an outer index: each thread owns `vec` consecutive columns (block * vec per block)
/// and walks down the scanned index, `items` steps of it loaded ahead of the scan.
struct ScanConfig {
  int block = 512;
  int group = 512;
  int vec = 1;
  int items = 1;
  bool split = false;

  int64_t chunk() const { return int64_t{group} * vec; }
  std::map<std::string, int64_t> as_map() const;
  friend bool operator==(const ScanConfig&, const ScanConfig&) = default;
};

/// The 32-bit workspace words a split scan variant takes per block of a row (SplitInfo::slots):
/// 512 records of 64 bits, the row's tile counter and two per tile (lower_scan.cpp).
inline constexpr int kLookbackSlots = 1024;
/// The pause (ns) between a look-back's polls of a record not yet written.
inline constexpr int kLookbackPollNs = 100;
/// The chunks (group * vec elements) of a split row's tile, the unit of its look-back: 8 (64
/// KiB of f32 in 512 threads' vectors of 4), fewer for rows of few chunks, more for rows whose
/// tiles would not fit the records.
inline constexpr int64_t kLookbackTileChunks = 8;

/// Row scans: a warp per row (the tier for rows of up to warp_scan_limit elements), a block
/// of 256 per row with one chunk a step (the tier up to block_scan_limit), a block of 256
/// loading 2 chunks a step (compiler/lower_scan.cpp: the tier for longer rows, the default),
/// other block sizes and depths for the tuner, scalar copies (the fallback for pointers that
/// are not aligned to the vectors), and the split variant, which the rule runs for few, very
/// long rows.
std::vector<ScanConfig> row_scan_space(int max_vec);
ScanConfig default_row_scan_config(int max_vec);
/// The tier limit of a row scan config: warp_scan_limit for a vector warp per row,
/// block_scan_limit for a vector block of 256 with one chunk a step (when not 0), INT64_MAX
/// for the default, 0 (not a tier) for the others.
int64_t row_scan_tier_limit(const ScanConfig& c, int max_vec);
/// The longest row a warp scans in the heuristic. Measured on an H200 with rows loading a step
/// ahead, 128M elements, over row lengths of 512 to 262144 (bench/results/2026-11-27-h200-ahead,
/// call 4): with vectors of 4 (f32, i32) a warp per row is the fastest up to 2048 elements (8
/// KiB) and a block of 256 3.6-5% faster from 4096 to 16384 (266.2 against 276.2 us at 4096,
/// 264.4 against 278.5 at 8192); with vectors of 8 (16-bit rows, or f32 rows beside a 16-bit
/// output, whose block variants take many registers: cumsum_fused 392-397 us on a warp per
/// row against 403-415 on a block up to 16384) the warp stays the tier up to 64 KiB of
/// 2-byte elements (32768; bf16 rows of 8192 to 32768 1-3% faster on the default's blocks).
constexpr int64_t warp_scan_limit(int max_vec) {
  return max_vec <= 4 ? int64_t{512} * max_vec : int64_t{4096} * max_vec;
}
/// The longest row a block of 256 with one chunk a step scans in the heuristic, when max_vec
/// <= 4: 65536 f32 (256 KiB). Measured as above: one chunk a step (two in flight, the next
/// loading during this one's scan) beat two from 4096 to 65536 f32 elements (279.8 against
/// 298.8 us at 65536, level at 32768), two won at 262144 (290.0 against 302.1); with vectors
/// of 8, two won from 8192 bf16 on (0: no such tier).
constexpr int64_t block_scan_limit(int max_vec) {
  return max_vec <= 4 ? int64_t{16384} * max_vec : 0;
}
/// Outer scans: 128 threads of one column each with 16 steps loaded ahead (the default),
/// other blocks, depths and columns per thread for the tuner. For outer scans `vec` is the
/// columns a thread owns (block apart, so each access is coalesced across the warp), not a
/// vector width: their loads are scalar.
std::vector<ScanConfig> outer_scan_space(int max_vec);
ScanConfig default_outer_scan_config(int max_vec);

/// A contraction (compiler/lower_contraction.h): a block of warps_m x warps_n warps computes
/// output tiles of tile_m x tile_n elements, walking the reduced extent in steps of tile_k
/// through a pipeline of `stages` shared-memory buffers (cp.async), on mma.sync m16n8k16 with
/// f32 accumulators. Each warp owns (tile_m / warps_m) x (tile_n / warps_n) of the tile. The
/// block is persistent: it walks tiles blockIdx.x, + gridDim.x, ..., in the order `raster`
/// (0: down M within bands of `group` tile rows, then across N; 1: the transpose) so that
/// neighbouring blocks share operand tiles in L2.
struct ContractionConfig {
  int tile_m = 128, tile_n = 128, tile_k = 32;
  int warps_m = 2, warps_n = 4;
  int stages = 4;
  int group = 8;
  int raster = 0;
  int ctas_per_sm = 2;  // the persistent grid's blocks per SM (registers and shared memory)
  // Hopper's warpgroup MMA: the image for sm_90a issues wgmma.mma_async (one warpgroup per 64
  // rows of the tile, warps_m = tile_m / 16, warps_n = 1, tile_k = 64); the images for other
  // architectures run the same tiles on mma.sync.
  int wgmma = 0;
  // With wgmma, warp-specialized: a producer warpgroup (one more, after the MMA warps) feeds
  // the stages through TMA (cp.async.bulk.tensor, tensor maps the runtime builds) and
  // mbarriers, while the MMA warpgroups only compute; the images for other architectures run
  // mma.sync on the MMA warps and leave the producer's warps idle.
  int tma = 0;
  // With `tma`, ping-pong: each of the two MMA warpgroups computes whole tiles of its own
  // (tile_m / 64 wgmmas of 64 x tile_n per 16 of K), the block's tiles alternating between
  // them, so that one warpgroup's epilogue runs while the other's MMAs keep the tensor cores
  // busy; an ordering barrier hands the tensor cores from one mainloop to the next. Without,
  // the two warpgroups share each tile (64 rows each). warps_m stays 8 (the two warpgroups).
  int pingpong = 0;
  // With `tma`, the epilogue goes through shared memory: each MMA warpgroup writes its
  // accumulators there kEpilogueColumns columns at a time, then a loop (one copy of the
  // epilogue's code, not one per accumulator) reads them back four columns a thread and stores
  // rows of the output whole. The register epilogue unrolled over 128 accumulators a thread
  // with an erf-GELU is 210 KB of SASS: its warps waited on instruction fetch (ncu's
  // no_instruction stall, 5.4 cycles an instruction against 0.4 with a bias only: H200,
  // bench/results/2026-11-25-h200-epilogue).
  int smem_epilogue = 0;
  // With `tma` and without `pingpong`: blocks per cluster (1: none; 2: a cluster of two blocks
  // computes two tiles at the same columns, one above the other, and each block's producer
  // multicasts half of B's tile into both, so that L2 serves B's tiles once per cluster; the
  // runtime launches clusters of that many blocks, manifest.h).
  int cluster = 1;
  // With `tma` and without `pingpong`, for a kernel with one output of 2 or 4 bytes an
  // element (contraction_store_param): each MMA warpgroup writes its 64 rows of the output tile,
  // 128 bytes of columns at a time, to one of two shared-memory buffers in the 128-byte swizzle
  // and one thread stores each through a TMA tensor store (a tensor map of the output the
  // runtime encodes), which runs on while the warps go on to the next chunk and tile; a store's
  // buffer is written again once the store has read it. Out-of-bounds rows and columns are
  // clipped by TMA. Where the runtime cannot encode the output's map, the epilogue runs as
  // without (`smem_epilogue` or registers), in the same shared memory.
  int tma_store = 0;
  // Split-K, for problems of few tiles and a long reduced extent: with `tma` and without
  // `pingpong` or a cluster. The runtime launches the kernel twice (manifest.h: a split
  // contraction variant) with S blocks per tile: in phase 0, block (tile, s) multiplies the
  // tile's reduced steps [s k_tiles / S, (s + 1) k_tiles / S) and writes its f32 accumulators
  // to a record of the workspace; in phase 1, on the same grid, block (tile, s) adds the tile's
  // S records in order (deterministic) for the rows of its warps w with w % S = s and runs the
  // register epilogue there. Its images without TMA do the same on their MMA warps.
  int split = 0;
  static constexpr int kEpilogueColumns = 32;
  /// Floats between rows of the epilogue's buffer: 8 more than its columns, so that the
  /// accumulators' 8-byte writes (four rows of 32 bytes a half-warp) fall in distinct banks.
  static constexpr int kEpilogueStride = kEpilogueColumns + 8;
  /// Bytes of one MMA warpgroup's epilogue buffer (64 rows).
  static constexpr int64_t kEpilogueBytes = int64_t{64} * kEpilogueStride * 4;
  /// Bytes of one TMA store buffer: 64 rows of 128 bytes.
  static constexpr int64_t kStoreBufferBytes = 64 * 128;

  /// The warps that compute (and, without `tma`, copy).
  int math_threads() const { return 32 * warps_m * warps_n; }
  int threads() const { return math_threads() + (tma ? kProducerThreads : 0); }
  static constexpr int kProducerThreads = 128;
  /// Bytes of one pipeline stage: both operands' tiles of `element_bytes` elements.
  int64_t stage_bytes(int element_bytes) const {
    return int64_t{tile_m + tile_n} * tile_k * element_bytes;
  }
  /// Dynamic shared memory: the stages, with `tma` their two mbarriers each (full, empty),
  /// with `pingpong` one more per MMA warpgroup (its mainloop is done), then from
  /// epilogue_offset with `smem_epilogue` each MMA warpgroup's epilogue buffer and with
  /// `tma_store` each MMA warpgroup's two store buffers (the same bytes: a launch uses one or
  /// the other).
  int64_t smem_bytes(int element_bytes) const {
    const int64_t epilogue =
        std::max(smem_epilogue ? 2 * kEpilogueBytes : 0, tma_store ? 4 * kStoreBufferBytes : 0);
    return epilogue > 0 ? epilogue_offset(element_bytes) + epilogue
                        : stages * stage_bytes(element_bytes) + barrier_bytes();
  }
  int64_t barrier_bytes() const { return (tma ? int64_t{16} * stages : 0) + (pingpong ? 16 : 0); }
  /// The store buffers start at a multiple of 1024 bytes (the 128-byte swizzle's pattern).
  int64_t epilogue_offset(int element_bytes) const {
    const int64_t align = tma_store ? 1024 : 128;
    return (stages * stage_bytes(element_bytes) + barrier_bytes() + align - 1) / align * align;
  }
  std::map<std::string, int64_t> as_map() const;
  friend bool operator==(const ContractionConfig&, const ContractionConfig&) = default;
};

/// `c` for operands of `element_bytes` an element (4: f32 read as tf32): tile_k the same bytes
/// of a row as the configs below take for 2-byte elements, so the same shared memory.
ContractionConfig with_element_bytes(ContractionConfig c, int element_bytes);

/// The precompiled contraction variants: mma.sync tiles (128 x 128, larger ones for large
/// problems, 64 x 64 for problems with few tiles), then the wgmma tiles.
std::vector<ContractionConfig> contraction_config_space();
/// wgmma fed by TMA, 128 x 256 x 64, two MMA warpgroups and a producer, 4 stages, bands of 8
/// tile rows, 1 block per SM.
ContractionConfig default_contraction_config();
/// ... and for an epilogue that evaluates a transcendental function (erf, exp, tanh, ...):
/// the same with the epilogue through shared memory (`smem_epilogue`).
ContractionConfig default_contraction_config_heavy();
/// Split-K (`split`): TMA-fed 128 x 128 tiles whose reduced extent the runtime spreads over
/// several blocks, for problems of few tiles (bundle/rule.h contraction_split_blocks).
ContractionConfig contraction_split_config();

}  // namespace kiln
