// The bundle manifest: the contract between the compiler (which writes it) and the runtime
// (which reads it). A bundle is a directory holding manifest.json and, for every variant, a
// PTX file and (when it could be assembled) a cubin per target architecture.
//
// Kernel ABI. A spec kernel runs as one or more GPU launches ("steps"). Every step's entry
// function takes the same parameters: one global pointer per kernel parameter (inputs then
// outputs, declared order; a scalar parameter (ParamInfo::scalar, format 7) by value instead:
// its dtype's bytes, aligned to their size), one per buffer (KernelInfo::buffers order), then one
// i64 per symbol (KernelInfo::symbols order). Buffers are the intermediates that one step writes
// and a later one reads: the runtime allocates them for each launch of the kernel (shape and dtype
// as declared, each kBufferAlign-byte aligned, contents undefined until written), passes the same
// ones to every step, in order on one stream, and frees them after the last step. A step iterates
// over its `space`; for geometry "flat" the launch is
//   block = (block_threads, 1, 1)
//   grid  = (min(ceil(numel(space) / elements_per_block), kMaxGridX), 1, 1)
// and the kernel loops (grid-stride) over whatever the grid does not cover. For a reduction
// step the space is its rows and elements_per_block the rows one block covers; a row
// reduction ("row_reduction") has no loop over rows, so the runtime refuses a launch whose
// rows need more than kMaxGridX blocks.
// A variant with align_bytes > 1 reads and writes some parameters with vectors: it may only
// run when every pointer in `aligned_params` is a multiple of align_bytes.
// A split variant of a row or outer reduction (Variant::split, split.phases > 0) spreads the
// reduced extent of each block's rows ("tile": elements_per_block rows; one row for a split
// row reduction) over S >= 1 blocks, S chosen by the runtime per launch. Its entry takes two
// more parameters after the symbols: a global pointer to a workspace of at least
// tiles * S * elements_per_block * split.slots 32-bit words (contents undefined), where
// tiles = ceil(numel(space) / elements_per_block), and an i64 phase. It is launched
// split.phases times, phase 0 .. split.phases - 1, in order on one stream with the same
// workspace, each with
//   block = (block_threads, 1, 1), grid = (tiles * S, 1, 1)   (at most kMaxGridX)
// Block b walks slice b % S of tile b / S; split.chunk is the elements of the reduced extent
// it takes per iteration. A row reduction's split variant with split.lead_last (its last phase
// only stores what the records hold: "lead_last" in JSON, present only when true) may launch
// its last phase with grid = (tiles, 1, 1) and S in bits 32-63 of the phase argument (bits
// 0-31: the phase); with those bits 0, as a reader that ignores lead_last launches every
// phase, the kernel takes S from the grid.
// A staging variant of a row reduction (Variant::stage, stage.bytes_per_element > 0) keeps
// long rows in dynamic shared memory. For rows of R elements with R % stage.vec == 0 it uses
// stage_bytes(stage, R) = R * bytes_per_element * rows_per_block bytes when the launch gives
// at least that much dynamic shared memory (sharedMemBytes); with less (0 included) it reads
// the rows from global memory in every pass: correct with any launch, only slower. Its entry
// takes the usual parameters. A reader that ignores `stage` launches it correctly.
// The strided variant of a row reduction may tile (format 9: stage.row_align > 0, stage.vec
// 1): a block copies its rows of the strided inputs into rows_per_block areas of dynamic
// shared memory, each row_align-aligned, before its passes (compiler/lower/reduction_rows.cpp),
// when the launch gives it stage_bytes(stage, R); with less it reads them through the strides.
// A scan step (kind "scan": y[.., j, ..] = cumsum(body, j) and its epilogue) lists as `space`
// the extents of its statement but the scanned one, and as `reduced` the scanned extent; its
// launch is the flat one over those rows (elements_per_block: rows a block covers), the kernel
// looping over the rows the grid does not cover. Its tiers (max_reduced) pick a variant by the
// scanned length as a row reduction's do. A split scan variant (split.phases = 2, slots 1024)
// is launched as a split row reduction is: phase 0 clears the records of the workspace, phase 1
// scans each row in one pass, its blocks taking the row's tiles in order and carrying across
// them through the records (a decoupled look-back, compiler/lower_scan.cpp). Its blocks wait on
// each other's records only for tiles that a running block holds, so any grid is safe.
// A contraction step (kind "contraction": c[b.., i, j] = sum(a[.., i, .., k, ..] * w[.., k, ..,
// j, ..], k), on tensor cores) iterates over output tiles: the last two dimensions of its space
// are cut into tiles of tile.m x tile.n elements (elements_per_block = tile.m * tile.n), every
// other dimension is a batch. Its entry takes the usual parameters and walks the tiles itself,
// tile t = blockIdx.x, blockIdx.x + gridDim.x, ... (a persistent kernel), so any grid of at
// least one block computes the whole output; the runtime launches
//   block = (block_threads, 1, 1), grid = (min(tiles, sm_count * tile.ctas_per_sm), 1, 1)
// with tile.smem_bytes of dynamic shared memory (the variant cannot load on a device that
// cannot give a block that much), tiles = batch * ceil(M / tile.m) * ceil(N / tile.n).
// A variant with tile.cluster = C > 1 (format 10) runs in clusters of C blocks (cluster
// dimensions (C, 1, 1), which its images for sm_90a also declare): cluster c walks the tiles
// of C x tile.m rows t = c, c + clusters, ..., the block of rank r in it the rows r * tile.m ..
// of each, so the runtime launches grid = C x min(tiles, the clusters the device holds at once
// (cuOccupancyMaxActiveClusters)) with tiles = batch * ceil(M / (C tile.m)) * ceil(N / tile.n).
// Its other images (no clusters) walk tiles of tile.m rows as above, on that grid.
// A split contraction variant (split-K, format 13: split.phases = 2, split.slots = 1, no
// cluster) spreads each tile's reduced extent over S >= 1 blocks, S chosen by the runtime per
// launch (bundle/rule.h contraction_split_blocks). Its entry takes a workspace pointer and an
// i64 phase after the symbols (before any tensor maps), and is launched twice on one stream with
// the same workspace of at least tiles * S * tile.m * tile.n 32-bit words (contents undefined),
// both times with grid = (tiles * S, 1, 1), the kernel taking S as gridDim.x / tiles: in phase
// 0 unit u (block u, u + gridDim.x, ...) multiplies slice u % S of tile u / S's reduced steps
// (of split.chunk elements: steps [s n / S, (s + 1) n / S) of n) into record u; in phase 1 unit
// u adds, for its part of tile u / S, the tile's S records in order and stores its outputs
// there.
// A contraction variant with tile.tensor_maps (format 6) reads operands through TMA: its entry
// takes, after the symbols (and a split variant's workspace and phase), one CUtensorMap per entry
// of tensor_maps (128 bytes, by value, 64-byte aligned), then an i64 flag: bit 0 set when the
// runtime encoded every map it reads through (else the kernel copies the operands without them:
// correct, only slower), bit 1 when it encoded every map it stores through (TensorMapInfo::store,
// format 12; else the kernel stores that output without it). Map i describes parameter (or buffer)
// `param` as the row-major tensor it is: rank = the parameter's rank, dimension d (innermost first)
// of extent shape[rank - 1 - d] and byte stride the product of the extents inside it, boxDim = box,
// element strides 1, no interleave, the 128-byte swizzle (box[0] * element bytes = 128), zero fill
// out of bounds. The runtime encodes the maps when TMA's rules allow (cuTensorMapEncodeTiled
// succeeds: a 16-byte aligned pointer, byte strides multiples of 16, ranks up to 5). When the maps
// it reads through cannot be, it runs tile.map_fallback instead when the variant names one (a
// variant without maps); a store map that cannot be only clears bit 1.
// Strided inputs (ParamInfo::strided, format 8: `x: f32[M, N] strided`): every step's entry of
// a kernel with strided inputs takes, after all the parameters above (symbols, a split's
// workspace and phase), one i64 per dimension of each strided input, in parameter order: the
// strides of the view in elements, each >= 0, element (i0, i1, ..) at base + i0 * s0 + i1 *
// s1 + ... A step that reads a strided input has strided variants (Variant::strided:
// align_bytes 1, not split), which read it through those strides: exactly one for rows of any
// length (max_reduced 0) and, in a row reduction step (format 9), others for rows of up to
// max_reduced elements (not tiers of the usual rule); its other variants read it as the
// contiguous (row-major) tensor it must then be. The runtime runs the step's strided variant
// for its rows (bundle/rule.h strided_variant) whenever some strided input's strides are not
// the contiguous ones (contiguous_strides; strides of extent-1 dimensions never matter), and
// its usual rule otherwise. Outputs and buffers are never strided.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/status.h"
#include "ir/dtype.h"
#include "ir/shape.h"

namespace kiln::bundle {

// Version 2 added the images' content hashes, version 3 split variants, version 4 buffers,
// version 5 contraction steps, version 6 tensor maps, version 7 scalar parameters, version 8
// strided inputs, version 9 strided variants that tile (stage.row_align), version 10 clusters
// (tile.cluster), version 11 pointwise variants with a general entry (Variant::general),
// version 12 tensor maps that store an output (TensorMapInfo::store), version 13 split
// contraction variants (split-K), version 14 outer reduction variants with a general entry.
// Bundles before version 3 are refused (recompile them): a version 2 reader would launch a split
// variant as a plain one. A version 3 to 13 bundle reads as a version 14 one without what came
// later; an older reader refuses a newer version (a version 4 reader would launch a contraction's
// persistent kernel without its shared memory, a version 5 one without its tensor maps, a version
// 6 one would pass a scalar's value as a pointer, a version 7 one would launch an entry without
// its strides, a version 8 one would give a tile too little shared memory, a version 9 one would
// launch a cluster's blocks alone, a version 10 one would launch an entry that holds only the
// row-aligned 32-bit form on any shape, a version 11 one would encode an f32 output's map as
// 16-bit elements, a version 12 one refuses a split contraction variant as malformed, a version
// 13 one an outer reduction variant with a general entry).
inline constexpr int kFormatVersion = 14;
inline constexpr int kMaxClusterBlocks = 8;  // the portable cluster size
inline constexpr int kOldestFormatVersion = 3;
inline constexpr int64_t kMaxGridX = 2147483647;
inline constexpr int64_t kBufferAlign = 256;  // bytes; every buffer starts at a multiple

struct ParamInfo {
  std::string name;
  DType dtype;
  std::vector<Dim> shape;
  bool output = false;
  /// Passed by value at launch (`eps: f32`): an input of rank 0 whose argument is its value.
  bool scalar = false;
  /// Takes strides at launch (`x: f32[M, N] strided`, format 8): an input of rank >= 1.
  bool strided = false;
  friend bool operator==(const ParamInfo&, const ParamInfo&) = default;
};

/// Machine code for one architecture. `cubin` is empty when none was assembled. Each file's
/// content_hash (ir/content_hash.h) is recorded, and the runtime hands the driver only bytes that
/// match it: the driver may crash on machine code that is corrupt but well-formed ELF.
struct ArchImage {
  std::string arch;   // "sm_90"
  std::string ptx;    // file name inside the bundle
  std::string cubin;  // file name inside the bundle, or empty
  int registers = 0;
  int spill_bytes = 0;
  int shared_bytes = 0;
  std::string ptx_hash;    // content_hash of the PTX file: 16 hex digits
  std::string cubin_hash;  // content_hash of the cubin, or empty with `cubin`
  friend bool operator==(const ArchImage&, const ArchImage&) = default;
};

/// How a split variant runs (see the contract above); phases == 0 for every other variant.
struct SplitInfo {
  int phases = 0;     // launches per kernel launch, 2..64
  int slots = 0;      // 32-bit workspace words per (row, block), 1..1024
  int64_t chunk = 0;  // elements a block walks per iteration, >= 1
  // Row reductions: the rule runs the split only for rows of at least this many elements
  // (bundle/rule.h kSplitMinRowBytes of input); outer reductions: the fitted deep splits
  // (bundle/rule.h StepRule::fitted_splits), kDeepSplitMinReduced; 0: no such limit.
  // "min_reduced" in JSON, present only when > 0. Older readers ignore it: they split shorter
  // rows too, and take a fitted split for an outer step's narrow split (the fewest columns per
  // tile), which runs few columns correctly but slower (format 13 either way).
  int64_t min_reduced = 0;
  // Row reductions: the last phase may run one block per tile, S in the phase's high word.
  bool lead_last = false;
  friend bool operator==(const SplitInfo&, const SplitInfo&) = default;
};

/// How a staging variant uses dynamic shared memory (see the contract above); all 0 for every
/// other variant.
struct StageInfo {
  int64_t bytes_per_element = 0;  // per element of a row: the staged inputs' sizes, 1..1024
  int64_t rows_per_block = 0;     // 1..1024
  int64_t vec = 0;                // rows whose length is not a multiple of vec run unstaged
  int64_t row_align = 0;          // > 0 (a strided variant's tile): each row's area rounded up
  friend bool operator==(const StageInfo&, const StageInfo&) = default;
};

/// The dynamic shared memory (bytes) a staging variant uses for rows of `reduced` elements,
/// rows_per_block x (reduced x bytes_per_element, rounded up to a multiple of row_align when
/// it is > 0): 0 when it runs them unstaged anyway (reduced % vec != 0), or when the bytes
/// would exceed `available` (the most the device lets the variant have).
int64_t stage_bytes(const StageInfo& s, int64_t reduced, int64_t available);

/// A TMA tensor map a contraction variant's entry takes (see the contract above).
struct TensorMapInfo {
  int param = 0;             // index into KernelInfo::params, then ::buffers
  std::vector<int64_t> box;  // the box, innermost dimension first: one entry per dimension
  // Version 12: the kernel stores an output through this map ("store" in JSON, present only
  // when true); the maps it reads through come first.
  bool store = false;
  friend bool operator==(const TensorMapInfo&, const TensorMapInfo&) = default;
};
inline constexpr size_t kMaxTensorMaps = 4;
inline constexpr size_t kMaxTensorMapRank = 5;
inline constexpr int64_t kTensorMapSwizzleBytes = 128;

/// How a contraction variant tiles its output (see the contract above); all 0 for every other
/// variant.
struct TileInfo {
  int64_t m = 0, n = 0;                    // a tile's rows and columns, 1..1024
  int ctas_per_sm = 0;                     // the persistent grid: blocks per SM, 1..32
  int64_t smem_bytes = 0;                  // dynamic shared memory per block, 0..1 MiB
  std::vector<TensorMapInfo> tensor_maps;  // at most kMaxTensorMaps
  // With tensor maps: the variant of the same tiles that copies without them, which the
  // runtime runs instead when a map cannot be encoded (-1: none; then this one copies itself).
  int map_fallback = -1;
  // Blocks per cluster along M (format 10; "cluster" in JSON, present only when > 1): the
  // runtime launches clusters of that many blocks, each cluster walking tiles of cluster x m
  // rows (the contract above).
  int cluster = 1;
  // Whether a map of tensor_maps stores an output (TensorMapInfo::store).
  bool stores_output() const {
    return std::any_of(tensor_maps.begin(), tensor_maps.end(),
                       [](const TensorMapInfo& t) { return t.store; });
  }
  friend bool operator==(const TileInfo&, const TileInfo&) = default;
};

/// A pointwise variant's (format 11) or an outer reduction variant's (format 14) second entry,
/// for the launches its own entry does not serve. The variant's entry computes its element
/// indices in 32 bits and, when row_multiple > 0, reads vectors that never cross a row: it may
/// only run when the launch has at most 2^31 - 1 elements (launch_elements) and its innermost
/// extent is a multiple of row_multiple. Every other launch runs `entry`, which is correct for
/// every launch (its code for the launches above is the slower general form): one kernel
/// holding both forms took the registers of its costliest path, one that never ran on those
/// shapes (compiler/lower_pointwise.cpp).
struct GeneralForm {
  std::string entry;         // empty: the variant's entry serves every launch
  int64_t row_multiple = 0;  // 0: any innermost extent
  friend bool operator==(const GeneralForm&, const GeneralForm&) = default;
};

/// What bounds a launch's 32-bit indices (GeneralForm): a pointwise step's `rows` (its
/// elements); a reduction's rows x `reduced` elements, every offset into its tensors being
/// below that, and the 32-bit words of a split's `workspace_bytes`, whichever is larger
/// (INT64_MAX where the product overflows).
int64_t launch_elements(int64_t rows, int64_t reduced, int64_t workspace_bytes);

/// The bytes of a split launch's workspace (SplitInfo) over `blocks` blocks of
/// `elements_per_block` rows: a record of `slots` 4-byte words per row of a block; nullopt
/// where that overflows int64.
std::optional<int64_t> split_workspace_bytes(int64_t blocks, int64_t elements_per_block, int slots);

/// Whether a launch of `elements` elements (launch_elements) whose innermost extent is `inner`
/// runs the variant's general entry.
bool runs_general(const GeneralForm& g, int64_t elements, int64_t inner);

struct Variant {
  int id = 0;                             // index in Step::variants
  std::map<std::string, int64_t> config;  // e.g. {"block": 256, "vec": 4, "unroll": 2}
  bool is_default = false;                // the compiler's heuristic choice
  std::string entry;                      // PTX entry function name
  std::string geometry = "flat";
  int block_threads = 0;
  int64_t elements_per_block = 0;
  int align_bytes = 1;
  std::vector<int> aligned_params;  // indices into KernelInfo::params, then ::buffers
  std::vector<ArchImage> images;
  // A tier of a reduction step's heuristic: with no tuned choice, a row of R elements runs
  // the tier with the smallest max_reduced >= R (the largest tier when none). 0: not a tier.
  // A strided variant's is the rows it is for (the strided variants' own tiers, above). A
  // pointwise step's tiers have max_reduced 1 (its reduced extent) and differ in
  // min_rows_per_sm, its rows being its elements (compute-heavy steps, compiler/config.h). An
  // outer step's are not tiers: they mark the variants the rule runs for short columns, up to
  // max_reduced reduced rows (bundle/rule.h kShortOuterMaxReduced, kShortSplitMaxReduced).
  int64_t max_reduced = 0;
  // A tier that replaces the other tiers of its max_reduced when the step has at least
  // min_rows_per_sm rows per SM of the device (the looped rows' smaller blocks: bundle/rule.h).
  // 0: an ordinary tier. "min_rows_per_sm" in JSON, present only when > 0.
  int64_t min_rows_per_sm = 0;
  SplitInfo split;  // "split" in JSON, present only for split variants of row reductions
  StageInfo stage;  // "stage" in JSON, present only for staging variants of row reductions
  TileInfo tile;    // "tile" in JSON, present only for contraction variants
  // Reads the strided inputs through their strides (the contract above); "strided": true in
  // JSON, present only when set.
  bool strided = false;
  // A tier of a row reduction: its shifting twin (config "shift": 1, bundle/rule.h), which the
  // rule runs instead for rows whose length is not a multiple of the twin's config "vec" (> 1),
  // or -1. "odd_rows" in JSON, present only when >= 0.
  int odd_rows = -1;
  // Pointwise variants: the entry for the launches `entry` does not serve (GeneralForm);
  // "general" in JSON, present only when its entry is not empty.
  GeneralForm general;
  friend bool operator==(const Variant&, const Variant&) = default;
};

/// What a step computes: the one vocabulary of step kinds for the compiler, the runtime and
/// the tuner. The manifest spells them "pointwise", "row_reduction", "outer_reduction",
/// "contraction" and "scan".
enum class StepKind : uint8_t { pointwise, row_reduction, outer_reduction, contraction, scan };

/// "pointwise", "row_reduction", "outer_reduction", "contraction" or "scan".
std::string_view to_string(StepKind k);
/// The kind spelled `s`, or nullopt for any other text.
std::optional<StepKind> parse_step_kind(std::string_view s);

struct Step {
  std::string name;
  StepKind kind = StepKind::pointwise;
  std::vector<Dim> space;    // iteration extents (a reduction's rows)
  std::vector<Dim> reduced;  // a reduction's reduced extents, R their product (several only
                             // for a row or outer reduction over several indices), else empty
  std::vector<Variant> variants;
  // The largest error the step's approximate functions add, as a fraction of an output's
  // largest value (tanh and erf on tanh.approx.f32 in steps whose outputs are all f16 or
  // bf16: compiler/kernel_plan.h StepPlan::fast_functions), or that a term of its sums the spec
  // rounds to f16 or bf16 may add when the GPU rounds it the other way (its unit roundoff,
  // docs/testing.md); the harness adds it to its tolerance (autotune/harness.h). "approx_error"
  // in JSON, present only when > 0.
  double approx_error = 0;
  // Row reduction steps: (a tier's max_reduced, the variant that replaces that tier when the
  // step's rows are at most the device's SMs: bundle/rule.h), ascending; the compiler's
  // config.h row_few_rows_config. "few_rows" in JSON ([[limit, variant], ...]), present only
  // when not empty.
  std::vector<std::pair<int64_t, int>> few_rows;
  // Tiled pointwise steps (compiler/plan.h Tiling): the space positions of the tiles' across
  // dimension and of their innermost one, each one position or several consecutive ones run as
  // one (Tiling::joined), whose extents the rule reads (bundle/rule.h tiled_variant). "tiles" in
  // JSON ({"across": [1, 2], "inner": [3]}), present only on tiled steps. Older bundles lack it
  // and run their default at every shape, as an older reader, which ignores it, does: correct
  // either way, so it came without a new format version.
  std::vector<int> tile_across, tile_inner;
  // Whether the tiles' odd extents run element by element (Tiling::odd_shifted false: every
  // load a tiled load of 32-bit elements), where the rule's odd tiles hold half the elements a
  // thread (bundle/rule.h). "elementwise": true in "tiles"; absent: false, the rule as before.
  bool tile_elementwise = false;
  friend bool operator==(const Step&, const Step&) = default;
};

struct KernelInfo {
  std::string name;
  std::string hash;                // content_hash of the kernel's canonical IR
  std::string ir;                  // the kernel's canonical text (ir/text.h print)
  std::vector<ParamInfo> params;   // inputs then outputs
  std::vector<ParamInfo> buffers;  // intermediates between steps (output false), see above
  std::vector<std::string> symbols;
  std::vector<Step> steps;
  // Whether every image of the kernel for sm_90 and later waits for the kernel before it in
  // the stream (griddepcontrol.wait) before it reads what that one wrote or writes anything,
  // so that a step after the first may be launched while the one before it still runs
  // (programmatic dependent launch: compiler/codegen.h make_dependent, runtime/kernel.cpp).
  // "dependent_launch" in JSON, present only when true. Older bundles lack it and their steps
  // are launched each after the one before ends; an older reader ignores it and does the same,
  // which is correct for these images too, so it came without a new format version.
  bool dependent_launch = false;
  friend bool operator==(const KernelInfo&, const KernelInfo&) = default;
};

struct Manifest {
  int version = kFormatVersion;
  std::string kiln_version;
  std::string llvm_version;
  std::vector<KernelInfo> kernels;
  const KernelInfo* find(std::string_view name) const;
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

/// JSON text of a manifest (stable key order, two-space indent).
std::string to_json(const Manifest& m);
/// Parses manifest JSON; `origin` names the file in error messages. Rejects other format
/// versions, missing or mistyped fields, file names that leave the bundle directory, image
/// files without a content hash of 16 hex digits (cubin_hash is ignored when there is no
/// cubin), and variants whose aligned_params are out of range; also out-of-range numbers
/// (block_threads outside 1..1024, elements_per_block < 1, dims < 1, align_bytes not a power
/// of two), ids that are not their index, steps without exactly one default variant, unknown
/// geometries and dtypes, and symbols used in shapes but missing from `symbols`. Unknown
/// fields are ignored. Errors read "ORIGIN: kernels[0].steps[0].variants[2].block_threads:
/// reason". Never throws.
Result<Manifest> parse_manifest(std::string_view json, std::string_view origin);
/// Reads DIR/manifest.json.
Result<Manifest> read_manifest(const std::string& bundle_dir);

}  // namespace kiln::bundle
