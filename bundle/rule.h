// The rule that picks a step's variant when nothing is tuned, as a pure function of the
// manifest and the device's facts. It lives beside the manifest because two readers evaluate
// it: the runtime at every launch (runtime/launch.h) and the compiler's kernel plan, which
// prints it (`kiln compile --emit=plan`, `kiln explain`). The compiler writes what the rule
// reads (each variant's max_reduced, split and default flag: compiler/kernel_plan.h); nothing
// re-derives it.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "bundle/manifest.h"

namespace kiln::bundle {

inline int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0);
}

/// What the rule reads of the device.
struct DeviceFacts {
  int sm_count = 1;
  bool memory_pools = false;  // stream-ordered allocation: split variants and buffers need it
  // What one SM holds (resident_blocks): threads, 32-bit registers, shared memory (bytes).
  // Hopper's and the A100's by default; the runtime sets them from the compute capability.
  int threads_per_sm = 2048;
  int registers_per_sm = 65536;
  int64_t shared_per_sm = 167936;
};

/// The blocks of variant `v` that one SM of `device` holds at once: the fewest that its
/// threads, its registers (the most of any of its images, allocated per warp in units of 256)
/// and its static shared memory (plus the 1 KiB the driver reserves per block) allow, at most
/// 32. 0 when no image records its registers (the bundle then carries PTX only).
int resident_blocks(const Variant& v, const DeviceFacts& device);

/// A split launch gives each tile (a block's rows; one row for split rows) as many blocks as
/// fill one wave: `resident` blocks per SM (resident_blocks) on every SM, over the tiles,
/// rounded down, so that no second wave runs mostly idle; kSplitBlocksPerSm per SM, rounded
/// up, when the residency is unknown. Each block walks at least kSplitMinChunks chunks of the
/// reduced extent; the rule splits only when that gives every tile kSplitMinBlocks or more.
inline constexpr int kSplitBlocksPerSm = 4;
inline constexpr int kSplitMinChunks = 2;
inline constexpr int kSplitMinBlocks = 4;
/// An outer step splits from kOuterSplitMinBlocks blocks a tile where its reduced extent holds
/// kSplitMinBlocks x kSplitMinChunks chunks: the split runs for fewer tiles than SMs, where the
/// unsplit default has fewer than two blocks an SM (its tiles hold half the split's columns),
/// each with 8 KB of loads in flight, and the SM's bandwidth idles. Measured on an H200
/// (bench/results/2026-12-01-h200-read-flush-rules, calls 1, 4 and 5): bf16 column sums of
/// 16384 x 32768 took 246.6 us split (3 blocks a tile) against 318.9 unsplit, the layernorm
/// weight gradient of 8192 x 20000 162.3 against 224.6.
inline constexpr int kOuterSplitMinBlocks = 2;

/// A row reduction splits only rows that the tier it would run instead (one block of 512
/// threads a row, looping) walks at least this many bytes of: the inputs read at an element of
/// the row, times its length, times that tier's passes over it (the compiler turns it into the
/// split's min_reduced, split_min_reduced). Below it that block is faster than a split's two
/// or three launches. Measured on an H200: bench/results/2026-11-28-h200-short-outer, call 7
/// (fitted): 1 to 33 bf16 rows of 65536 (128 KiB, one pass) took 6.4-8.9 us in that tier
/// against 9.1-13.5 split; at 256 KiB level for bf16 and the split faster for the f32 layernorm
/// (3 passes, 17.7-21.3 against 27.0-28.4); from 512 KiB the split 1.4-11x faster.
/// bench/results/2026-11-28-h200-row-split-bytes (kernels and lengths not fitted to), call 2:
/// one-pass bf16 and f16 rows of 65536 to 131071 (row sums, logsumexp, mean and variance,
/// cross-entropy) at 1 and 16 rows took 0.66-0.99 of the split's time; rows walked twice (an
/// RMSNorm) or three times (a layernorm, a bf16 softmax) took 1.07-1.8x the split's at even
/// lengths from 65536, 81920 and 114688 respectively, which the passes keep on the split. Call
/// 3, this limit: row max, min and mean, f16 sums, cross-entropy and logsumexp at 70001 to
/// 122880, 0.59-0.96 of the split's time at all 48 shapes. A limit in chunks could not say this:
/// the bf16 and f32 splits both walk chunks of 8192 elements.
inline constexpr int64_t kSplitMinRowBytes = 256 * 1024;

/// The shortest row a row reduction's split runs for, given the bytes the looping tier walks
/// per element of the row: rows of at least kSplitMinRowBytes; 0 (no limit) for 0 bytes.
constexpr int64_t split_min_reduced(int64_t row_bytes_per_element) {
  return row_bytes_per_element > 0
             ? (kSplitMinRowBytes + row_bytes_per_element - 1) / row_bytes_per_element
             : 0;
}
/// The shortest reduced extent the deep split (StepRule::deep_split) runs. Measured on an H100
/// (bench/results/2026-11-28-h200-narrow-split, call 3: column sums of bf16 over 16, 64 and
/// 128 columns, f32 over 32, the layernorm weight gradient over 64; 16 steps in flight against
/// 8, interleaved, best of three rounds): 2% slower to 2% faster at 32768 rows, level to 10%
/// faster from 65536 to 4194304 (0.3% slower once, ln_wgrad at 4194304); on an H200 (call 1)
/// up to 13% slower from 2048 to 4096 rows.
inline constexpr int64_t kDeepSplitMinReduced = 65536;
/// Short outer reductions. The compiler gives the outer variants the rule runs for short columns
/// a limit (max_reduced): the unsplit ones kShortOuterMaxReduced, the short split
/// kShortSplitMaxReduced. Measured on an H200 (bench/results/2026-11-28-h200-short-outer, calls
/// 1 and 2: column sums of bf16 and f32, the layernorm weight gradient, a middle-axis mean and a
/// max over two leading indices, 1 to 65536 rows over 16 to 65536 columns, every variant):
/// - from 128 to 1023 rows, one launch of blocks with 32 (or 16) threads along the reduced index
///   took 5.3-13.1 us where the unsplit default (8 along it) took 6.0-26.1 and the split 9.4-16.2
///   (two launches; e.g. bf16 over 64 columns of 512 rows 7.0 against 11.9 and 9.4, f32 over 4096
///   of 512 9.0 against 13.3 and 13.1); below 128 rows (less than one step of 32 x 4 rows in
///   flight) the default was as fast or faster (96 rows: 5.3 against 6.0);
/// - from 1024 to 24576 rows over few columns, the split of chunks of 32 rows (the default's
///   blocks, split) took 9.3-15.0 us where the narrow split (chunks of 128) took 10.6-15.8 (bf16
///   over 16 columns of 2047 rows 10.4 against 13.2, of 16384 10.5 against 11.2); at 30000 and
///   32768 rows from 4% faster to 5% slower (call 3: bf16 over 8 and 40 columns of 30000 rows
///   2-4% slower, over 136 4% faster).
inline constexpr int64_t kShortOuterMinReduced = 128;
inline constexpr int64_t kShortOuterMaxReduced = 1023;
inline constexpr int64_t kShortSplitMaxReduced = 24576;

/// One step's rule, derived once from the manifest (which variants loaded, and the device):
/// the variant it runs by default, its scalar fallback, the tiers and the split variant of a
/// reduction step.
struct StepRule {
  int chosen = -1;           // the manifest default when it loaded, else the lowest loadable id
  int scalar_fallback = -1;  // the best loadable variant with align_bytes == 1, or -1
  std::vector<std::pair<int64_t, int>> tiers;  // (max_reduced, variant), loadable, ascending
  // Row steps: Step::few_rows whose variants loaded: (a tier's limit, the variant that
  // replaces it when the rows are at most the SMs).
  std::vector<std::pair<int64_t, int>> few_rows;
  int split = -1;  // the split variant for few, very long rows (or few column tiles), or -1
  // Outer steps: the loadable split variant of split's vector width with the fewest columns
  // per tile when they are fewer than split's, else -1; it runs instead of split for fewer
  // columns than split's tile. narrow_scalar_split: the scalar (vec 1) split variant of the
  // fewest columns, or -1; it runs instead of narrow_split when the columns are not a
  // multiple of narrow_split's vec (then the contiguous extent is not either, and
  // narrow_split would run its scalar path). Neither is ever one of fitted_splits (they carry
  // a split.min_reduced, which the narrow split's candidates may not).
  int narrow_split = -1;
  int narrow_scalar_split = -1;
  // Outer steps: the loadable split variant with narrow_split's block, threads along the
  // reduced index and vector width, and more steps in flight (items), or -1; it runs instead
  // of narrow_split when the reduced extent is at least kDeepSplitMinReduced.
  int deep_split = -1;
  // Outer steps: the loadable split variants of narrow_split's vector width with a
  // split.min_reduced (the deep split's blocks with fewer threads along the rows), fewest
  // columns per tile first; where the rule runs deep_split, it runs the first of these whose
  // tile holds at least twice the columns instead (none: deep_split). Measured on an H200
  // (compiler/config.cpp fitted_outer_split_configs): bf16 column sums of 8388608 x 8 88.7 ->
  // 60.4 us, the layernorm weight gradient of 4194304 x 16 107.1 -> 92.7.
  std::vector<int> fitted_splits;
  // Outer steps: the loadable unsplit variants with a limit (max_reduced: short columns),
  // fewest columns per block first; and the loadable split variant with a limit (the short
  // split), or -1, which runs instead of narrow_split for reduced extents up to its limit.
  std::vector<int> short_outer;
  int short_split = -1;
  // Contraction steps: the loadable variants of the chosen one's kind (TMA-fed, or copied by
  // the MMA warps) with smaller tiles than it, largest tiles first, one per tile size (the
  // first in variant order); empty when there are none.
  std::vector<int> smaller;
  // Contraction steps: the first loadable split variant (split-K) of the chosen one's kind,
  // or -1.
  int contraction_split = -1;
  // [variant]: its tile.map_fallback when that loaded, else -1 (contraction steps).
  std::vector<int> map_fallback;
  // [variant]: its odd_rows twin when that loaded, else -1 (row reduction steps).
  std::vector<int> odd_rows;
  // Steps that read strided inputs (a variant is strided, manifest.h): the strided variant
  // without a row limit when it loaded, else -1, and the loaded strided variants for rows of
  // up to max_reduced elements, (limit, variant) sorted. A launch whose strides are not the
  // contiguous ones runs strided_variant's pick.
  bool reads_strided = false;
  int strided = -1;
  std::vector<std::pair<int64_t, int>> strided_tiers;
  // Tiled pointwise steps (Step::tile_across): where the step's odd extents run element by
  // element (Step::tile_elementwise), the first loadable variant with the chosen one's vec,
  // tiles of kOddTileSide on both sides and threads that each hold half the elements a thread of
  // the chosen one holds; else, where the chosen one's tiles are larger, the first with its vec
  // and those tiles; else -1. odd_tiles_smaller: whether they hold fewer elements than the
  // chosen one's (the latter kind; the former are its size with more threads).
  int odd_tiles = -1;
  bool odd_tiles_smaller = false;
  // Outer steps: [variant] the loadable variant of its config but for scalar loads (vec 1) and
  // as many steps in flight (items) as the step's widest vector holds elements, else its own
  // items (a split variant without such a twin: narrow_scalar_split), else -1. It runs in the
  // variant's place where the columns are not a multiple of its vector (heuristic_variant).
  std::vector<int> scalar_columns;
  // Outer steps: the first loadable unsplit variant without a limit that prefetches (config
  // "prefetch": scalar loads, 8 steps in flight, the next chunk's made before the last one's
  // sums: compiler/config.cpp prefetching_outer_configs), else -1. rule_variant runs it where
  // the columns span several row dimensions whose product is a multiple of the pick's vector
  // and whose innermost extent is not (then the pick's own scalar path runs: no twin), the
  // pick has no limit, the columns are not short, and its tiles are at least the SMs
  // (prefetching_variant).
  int prefetching = -1;
};

/// The tiles' side of StepRule::odd_tiles, which a tiled step runs instead of larger tiles where
/// they would run the element-by-element path or shift both sides (the extent of the tiles'
/// across dimension not a multiple of the vector), lie mostly outside the space (an extent below
/// half the larger tiles' side) or are fewer than kFewTilesPerSm an SM; measured on an H200
/// (bench/results/2026-11-30-h200-joined-dims, calls 1 and 2; bench/results/
/// 2026-12-01-h200-read-flush-rules, call 1, with the L2 flush that reads): bf16 tiles of 64 x 64
/// took 0.73-0.97x the time of 128 x 128 at the 7 odd shapes measured first, 0.94x (4095 x 4097)
/// to 1.02x (8191 x 8193) under the reading flush; at aligned shapes 128 x 128 (the default
/// there) took 0.94-1.02x the time of 64 x 64, but 1.17x and 1.11x at 1000 x 3000 and 3000 x 1000
/// (192 tiles for 132 SMs). Where only the innermost extent is not a multiple of the vector (the
/// tiles' input rows start aligned: the aligned-rows path, compiler/lower_tiled.cpp) the larger
/// tiles run: under the reading flush 128 x 128 took 0.88-0.95x the time of 64 x 64 and
/// 0.94-1.00x that of 64 x 128 (which this rule ran before) at five such shapes ([8, 2047, 32,
/// 127] -> [8, 32, 127, 2047] 71.5 against 77.0 and 76.0 us). Threads holding half the elements,
/// where odd extents run element by element: f32 transposes' tiles of 64 x 64 (the default's),
/// 128 threads against the default's 64, took 0.90-0.96x the time at eight such shapes, element
/// by element or aligned rows (bench/results/2026-12-01-h200-strides, call 5: 8191 x 8193 154.7
/// -> 147.7 us, 8191 x 8192 147.9 -> 136.9), and 0.91-0.94x for a rotation and a scaled
/// transpose (call 6); an f32 transpose with a contiguous add, whose odd extents run shifted
/// vectors, took 1.17-1.19x (8191 x 8193 200.9 -> 238.1), and keeps the default's threads.
inline constexpr int64_t kOddTileSide = 64;
/// Fewer tiles of the chosen variant than this many an SM run the smaller odd tiles (above).
inline constexpr int64_t kFewTilesPerSm = 2;

/// The strided variant for rows of `reduced` elements: the strided tier of the smallest limit
/// >= reduced, else rule.strided (-1 when neither loaded).
int strided_variant(const StepRule& rule, int64_t reduced);

/// Whether `strides` (elements) are the contiguous (row-major) strides of `extents`: each
/// dimension's stride is the product of the extents inside it, except that a dimension of
/// extent 1 may have any stride (it is only ever read at index 0).
inline bool contiguous_strides(std::span<const int64_t> extents, std::span<const int64_t> strides) {
  int64_t expect = 1;
  for (size_t d = extents.size(); d-- > 0;) {
    if (extents[d] != 1 && strides[d] != expect) return false;
    expect *= extents[d];  // the caller checked that the element count fits int64
  }
  return true;
}
/// `loadable[v]`: whether variant v of `step` loaded on this device. chosen is -1 when none did.
StepRule step_rule(const Step& step, const std::vector<bool>& loadable, const DeviceFacts& device);

/// The rule once `variant` is chosen explicitly (Kernel::set_choice: `kiln run --variant`, an
/// application's override): `variant` runs at every shape. Only what a launch needs to run a
/// variant correctly carries over (the scalar and tensor-map fallbacks for misaligned pointers,
/// the odd-row twins a tuned bucket entry runs, the strided variants for strided views); every
/// field the heuristic reads (tiers, the splits, short columns, smaller contraction tiles) starts
/// empty, so a field added to StepRule for the heuristic is off here unless it is copied below.
/// `variant` is the caller's to check (Kernel::check_variant).
StepRule pinned_rule(const StepRule& rule, int variant);

/// Blocks per tile of a split launch (above), the grid within kMaxGridX, for `resident` blocks
/// per SM (0: unknown). Defined for any tiles, reduced, chunk >= 1, sm_count >= 1 and
/// resident >= 0.
int64_t split_blocks(int64_t tiles, int64_t reduced, int64_t chunk, int sm_count, int resident);

/// Split-K (manifest.h: a split contraction variant) gives each of `tiles` tiles as many blocks
/// as fill one wave of `per_sm` blocks (tile.ctas_per_sm) on every SM, rounded down, each
/// multiplying at least kContractionSplitMinSteps steps of `chunk` elements of the reduced
/// extent `reduced`; at least 1.
inline constexpr int kContractionSplitMinSteps = 8;
int64_t contraction_split_blocks(int64_t tiles, int64_t reduced, int64_t chunk, int sm_count,
                                 int per_sm);

/// Whether the rule runs split-K for tiles that leave more than half the SMs idle: a reduced
/// extent of kContractionSplitMinReduced steps (of `chunk`) or more, and S =
/// contraction_split_blocks of 3 or more, or of 2 from kContractionSplitLongReduced steps on.
/// Measured on an H200 against the 128 x 64 tiles the rule ran before (bench/results/
/// 2026-11-30-h200-split-k, 21 shapes): the split's second launch and records cost a few us,
/// so at 32 steps it lost (512 x 512 x 2048: 13.7 against 12.5 us), with S = 2 it lost up to
/// 128 steps (1024 x 1024 x 8192: 35.1 against 34.1) and won from 256 (1024 x 1024 x 16384:
/// 57.0 against 61.8), with S >= 3 it won from 64 steps (512 x 512 x 4096: 16.8 against 19.1;
/// 256 x 256 x 65536: 46.8 against 219.6).
inline constexpr int kContractionSplitMinReduced = 64;
inline constexpr int kContractionSplitLongReduced = 256;
bool contraction_splits(int64_t split, int64_t reduced, int64_t chunk);

/// The most rows (an outer reduction's columns) the narrow split runs, given the elements per
/// block of the wide split (its tile) and of the narrow one: while the narrow tiles needed cover
/// fewer columns than one wide tile (192 of bf16 for tiles of 256 and 64, 96 of f32 for 128 and
/// 32); 0 when the narrow tile is not narrower.
int64_t narrow_split_max_rows(int64_t wide_tile, int64_t narrow_tile);

/// Rows of up to this many elements run their few-rows variant (StepRule::few_rows) on at most
/// half the SMs' rows, longer ones on at most the SMs'. Measured on an H200
/// (bench/results/2026-11-28-h200-few-rows, call 1: 7 kernels, 9 lengths, the few-rows
/// variant's time over the tier's): rows of 768 and 1000, 0.83-1.01 at 1 and 16 rows but
/// 0.92-1.12 at 132 (slower at 7 of 14); rows of 1536 to 8192, 0.72-1.01 at 1 and 16 rows and
/// 0.82-1.02 at 132.
inline constexpr int64_t kFewRowsShortLimit = 1024;
/// A tier of `limit` runs its few-rows variant on rows at most the SMs divided by this: 2 up
/// to kFewRowsShortLimit, else 1 (heuristic_variant reads it, and explain prints it).
inline int64_t few_rows_sm_divisor(int64_t limit) {
  return limit <= kFewRowsShortLimit ? 2 : 1;
}

/// The variant the rule runs for a step whose space holds `rows` and whose reduced extent is
/// `reduced` elements (1 for a pointwise step): for an outer step, the first of short_outer whose
/// limit `reduced` does not pass, from kShortOuterMinReduced on, and whose tiles (ceil(rows /
/// elements_per_block)) are fewer than the SMs; else the split variant (narrow_split for at most
/// narrow_split_max_rows rows, deep_split instead from kDeepSplitMinReduced on (or the first of
/// fitted_splits whose tile holds 2 x rows or more, reaches its split.min_reduced and gives its
/// tile enough blocks), short_split up to its limit, narrow_scalar_split for fewer rows
/// than a tile of split's that are not whole vectors of narrow_split's) when it would have fewer
/// tiles than SMs, `reduced` reaches its split.min_reduced and the split gives each at least
/// kSplitMinBlocks blocks (an outer step kOuterSplitMinBlocks, where `reduced` holds
/// kSplitMinBlocks x kSplitMinChunks of its chunks); else the tier with the smallest max_reduced >=
/// reduced (the largest tier when none; of the tiers with that max_reduced, the one with the
/// largest min_rows_per_sm that rows reach, rows >= min_rows_per_sm * SMs; on rows at most the SMs
/// / few_rows_sm_divisor(that tier's limit), the variant rule.few_rows gives for that limit, if
/// any), or that tier's odd_rows twin when it has one and `reduced` is not a multiple of the twin's
/// vec (measured on an H200: a softmax of 16384 x 4095 bf16 took 73.7 us shifted against 181.0 on
/// scalars, bench/results/2026-11-25-h200-memory-bound); else rule.chosen. An outer step's pick
/// whose vector does not divide `rows` (the columns) runs its scalar_columns twin where it has one,
/// a split pick the chosen variant's twin instead where that has SMs' worth of tiles or more
/// (measured on an H200, bench/results/2026-12-01-h200-read-flush-rules, calls 1 and 3: f32
/// column sums of 6000 x 20001 135.1 us against 489.7 on the vector variant's scalar path, bf16
/// ones 76.7 against 164.9 on the split's). Staging variants are never chosen
/// here (measured slower: docs/architecture.md). A contraction step whose rule.chosen would have
/// fewer tiles than half the GPU's SMs (tiles counted as ceil(rows / elements_per_block), rows
/// being every output element) runs rule.contraction_split when its tiles too leave more than half
/// the SMs idle and contraction_splits says so for the blocks contraction_split_blocks gives each;
/// else the first of rule.smaller (the largest tiles) that gives at least half the SMs a tile, else
/// the last (the smallest tiles); else rule.chosen. Values below 1 (unchecked input) give
/// rule.chosen.
int heuristic_variant(const Step& step, const StepRule& rule, int64_t rows, int64_t reduced,
                      const DeviceFacts& device);

/// What the rule runs for a tiled pointwise step (Step::tile_across) over a space of extents
/// `space`, `variant` being heuristic_variant's pick: when `variant` is rule.chosen, rule.odd_tiles
/// where the extent of the tiles' across dimension (the product of its positions') is not a
/// multiple of the chosen variant's vec, either extent is below half the chosen's tile side, or
/// the innermost one is not a multiple of vec and the odd tiles are not smaller than the chosen's
/// (kOddTileSide: then the larger tiles run the aligned-rows path); and, where the odd tiles are
/// smaller, wherever the chosen's tiles over `space` number fewer than kFewTilesPerSm x
/// device.sm_count; else `variant`. `space` holds the step's extents, each at least 1, whose
/// product fits int64.
int tiled_variant(const Step& step, const StepRule& rule, int variant,
                  std::span<const int64_t> space, const DeviceFacts& device);

/// The variant the rule runs for `step` at one shape, `space` and `reduced` being the extents of
/// its space and of its reduced dimensions (none: 1): heuristic_variant on their products, then
/// prefetching_variant and few_tiles_variant for an outer step, tiled_variant for a tiled step. An
/// extent below 1 or a product past int64 (unchecked input) gives rule.chosen. The runtime
/// (launch::heuristic_for) and `kiln explain` both run this.
int rule_variant(const Step& step, const StepRule& rule, std::span<const int64_t> space,
                 std::span<const int64_t> reduced, const DeviceFacts& device);

/// What the rule runs for an outer step over columns of extents `space` (at least 1 each, `rows`
/// their product) reducing `reduced` elements, `variant` being heuristic_variant's pick:
/// rule.prefetching where `space` has two extents or more, the innermost not a multiple of the
/// pick's vector but `rows` one, the pick has no max_reduced, `reduced` passes
/// kShortOuterMaxReduced (shorter columns: not measured), and ceil(rows / its
/// elements_per_block) >= the SMs; else `variant`.
/// Measured on an H200 (bench/results/2026-12-01-h200-outer-scalar, call 5, against the pick:
/// the vector path's scalar loads, items / vec steps of them in flight): 12 of 16 means, maxima
/// and sums over middle axes 1.09-1.85x faster (f32 means over [64, 1024, 513] 45.2 -> 38.5 us,
/// [16, 4096, 1001] 88.5 -> 65.7, bf16 [8, 2048, 4097] 87.4 -> 52.3), three 1-3.5% slower.
int prefetching_variant(const Step& step, const StepRule& rule, int variant,
                        std::span<const int64_t> space, int64_t rows, int64_t reduced,
                        const DeviceFacts& device);

/// What the rule runs for an outer step in place of `variant` (prefetching_variant's result):
/// the deep split's scalar twin (rule.scalar_columns; rule.deep_split where it has none) where
/// `variant` is an unsplit scalar variant standing in for the vector pick (its scalar twin, or
/// rule.prefetching: the columns are not whole vectors), its tiles, ceil(rows /
/// elements_per_block), are fewer than twice the SMs, and `reduced` passes
/// kShortOuterMaxReduced; else `variant`. There the unsplit kernel runs one block of 256
/// threads an SM (two at most), each walking the whole reduction, and the deep split (16 steps
/// in flight, its scalar path, the reduction spread over 2+ blocks a tile) was the fastest or
/// within 10% of it. Measured on an H200 (bench/results/2026-12-01-h200-stepped-axes, call 5:
/// every variant at 12 shapes of 128 to 400 tiles): at 132 to 250 tiles the split 1.2-5.9x
/// faster at all 8 (f32 means over [6, 8192, 705] 131.8 -> 44.1 us and [4, 4096, 1057] 43.5 ->
/// 26.9, bf16 [4, 8192, 1057] 287.9 -> 48.8, sums over b and h of [2, 128, 1000, 33] 29.5 ->
/// 20.9), at 256-257 tiles 7% slower and 2% faster, from 396 tiles slower (not run there).
/// Call 6, the rule at 16 shapes, 8 new: 15 faster, 1.01-5.7x (f32 column sums of 100000 x 4223
/// 1477 -> 453 us), the bias gradient at 256 tiles 7% slower. The twin, not the deep split's own
/// scalar path: with 32-bit indices in the variants' own entries (compiler/lower_reduction.cpp)
/// the deep split's scalar path took 1.1-1.8x the twin's time at all 5 shapes measured, and the
/// twin 0.70-0.96x the time the deep split took with 64-bit ones (bench/results/
/// 2026-12-02-h200-index32, call 3: bf16 column sums of 8191 x 8193 63.3 -> 51.2 us, the bias
/// gradient of [8, 12, 512, 513] 39.0 -> 28.5, a bf16 mean over [4, 8192, 1057] 48.3 -> 34.0).
int few_tiles_variant(const Step& step, const StepRule& rule, int variant, int64_t rows,
                      int64_t reduced, const DeviceFacts& device);
/// The variant few_tiles_variant runs where it takes one: the deep split's scalar twin, or
/// rule.deep_split where it has none.
int few_tiles_pick(const StepRule& rule);

/// `variant`'s odd-row twin (StepRule::odd_rows) when it has one and `reduced` is not a
/// multiple of the twin's vec, else `variant`: what the rule runs for rows of `reduced`
/// elements instead of a tier, whether the rule or a cache entry tuned for another shape of the
/// same bucket (runtime/kernel.h) picked it.
int odd_rows_variant(const Step& step, const StepRule& rule, int variant, int64_t reduced);

}  // namespace kiln::bundle
