// See lower_contraction.h for the kernel's structure.
#include "compiler/lower_contraction.h"

#include <fmt/format.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>

#include "bundle/manifest.h"
#include "compiler/codegen.h"
#include "compiler/emit.h"
#include "compiler/plan.h"

namespace kiln {
namespace {

using llvm::BasicBlock;
using llvm::Value;

constexpr int kChunkBytes = 16;  // one cp.async, one row of an 8 x 8 ldmatrix matrix
// The reduced extent of one MMA instruction, in bytes of a row: k16 of f16 and bf16 (mma.sync
// m16n8k16, wgmma k16), k8 of tf32 (m16n8k8, wgmma k8).
constexpr int kMmaKBytes = 32;
constexpr size_t kOperands = 2;  // tensor maps of a TMA config: A's, then B's
// Registers per thread after setmaxnreg: the producer needs few, the MMA warpgroups hold the
// accumulators. setmaxnreg.inc waits until the block's pool (what ptxas allocated it: 168 a
// thread at 384 threads) holds the registers asked for, so 128 x 40 + 256 x 232 = 168 x 384
// exactly (48 for the producer, as before, hung on an H200 once ptxas honoured setmaxnreg).
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;

// The config an image of `cfg` for `arch` runs: a ping-pong config's images without wgmma share
// each tile among the 8 MMA warps as 2 x 4 warps of mma.sync, like the other configs.
// Its images other than the warp-specialized one store the accumulators from registers.
ContractionConfig image_config(ContractionConfig cfg, const std::string& arch) {
  if (cfg.pingpong && !(cfg.wgmma && arch == "sm_90a")) {
    cfg.warps_m = 2;
    cfg.warps_n = 4;
    cfg.pingpong = 0;
  }
  if (!(cfg.wgmma && cfg.tma && arch == "sm_90a")) {
    cfg.smem_epilogue = 0;
    cfg.cluster = 1;
  }
  return cfg;
}

// One operand as the kernel reads it.
struct Operand {
  const ContractionOperand* info = nullptr;
  Value* base = nullptr;                      // global pointer to its first element
  Value* stride_mn = nullptr;                 // elements between consecutive M (or N) indices
  Value* stride_k = nullptr;                  // ... and reduced indices
  std::vector<std::pair<Value*, int>> batch;  // (stride, output dimension)
  Value* extent_mn = nullptr;                 // M or N
  Value* vector_ok = nullptr;  // i1: 16-byte copies are aligned (see lower_contraction.h)
  int smem_offset = 0;         // bytes from a stage's start
  // The tile in shared memory: `rows` rows of `chunks` 16-byte chunks; a row is an M/N index
  // (K-major operands) or a reduced index (the others).
  int rows = 0, chunks = 0;
};

class ContractionLowering {
 public:
  ContractionLowering(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                      const ContractionConfig& cfg, bool fast_functions, const std::string& arch)
      : wgmma_(cfg.wgmma != 0 && arch == "sm_90a"),
        specialized_(wgmma_ && cfg.tma != 0),
        pingpong_(specialized_ && cfg.pingpong != 0),
        split_(cfg.split != 0),
        cluster_(specialized_ && !pingpong_ ? std::max(cfg.cluster, 1) : 1),
        m_(m),
        b_(m.getContext()),
        em_(m, b_),
        abi_(abi),
        sk_(sk),
        c_(*sk.contraction),
        cfg_(image_config(cfg, arch)),
        params_(abi.params()),
        symbols_(abi.symbols()),
        dtype_(c_.a.dtype),
        elem_bytes_(static_cast<int>(size_of(dtype_))),
        k_per_mma_(kMmaKBytes / elem_bytes_),
        k_per_chunk_(kChunkBytes / elem_bytes_),
        store_param_(contraction_store_param(abi, sk, cfg)),
        tma_store_(specialized_ && store_param_ >= 0),
        defer_wait_(dependent_launch_arch(arch) && contraction_defers_wait(abi, sk)) {
    em_.set_fast_functions(fast_functions);
  }

  void run(const std::string& entry) {
    check_config();
    fn_ = em_.declare_kernel(abi_, entry, cfg_.threads(), split_, tensor_maps());
    if (cluster_ > 1) require_cluster(*fn_, cluster_);
    // f32 FMA tiles hold their operands in registers as well as the accumulators: left alone,
    // ptxas gave them 198-255 registers a thread (one block per SM where the config asks for
    // more); held to the config's blocks per SM instead.
    if (c_.fma()) em_.min_blocks_per_sm(fn_, cfg_.ctas_per_sm);
    if (defer_wait_) defer_dependency_wait(*fn_);
    b_.SetInsertPoint(BasicBlock::Create(m_.getContext(), "entry", fn_));
    auto* smem_ty = llvm::ArrayType::get(b_.getInt8Ty(), 0);
    smem_ =
        new llvm::GlobalVariable(m_, smem_ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                 entry + "_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    smem_->setAlignment(llvm::Align(1024));  // the 128-byte swizzle's atoms: 1024 bytes
    set_up();
    // for (t = blockIdx.x; t < tiles; t += gridDim.x)
    Value* bid = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Value* nb = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    nblocks_ = nb;
    if (specialized_) {
      run_specialized(bid);
      return;
    }
    if (cfg_.tma) {
      // Without TMA (architectures other than sm_90a) the producer's warps have nothing to
      // do; the MMA warps synchronize among themselves (barrier()).
      BasicBlock* idle = BasicBlock::Create(m_.getContext(), "idle", fn_);
      BasicBlock* work = BasicBlock::Create(m_.getContext(), "work", fn_);
      b_.CreateCondBr(b_.CreateICmpUGE(tid_, i32(cfg_.math_threads())), idle, work);
      b_.SetInsertPoint(idle);
      b_.CreateRetVoid();
      b_.SetInsertPoint(work);
    }
    auto walk = [&] {
      // The first tile's first steps are copied before the loop; each later tile's at the end
      // of the tile before it (tile() below).
      if_then(b_.CreateICmpSLT(bid, units_), [&] {
        place_unit(bid);
        prologue();
      });
      loop(bid, units_, nb, "tile", [&](Value* t) { tile(t); });
    };
    if (split_) {
      if_else(
          folding_, [&] { fold(bid); }, walk);
    } else {
      walk();
    }
    b_.CreateRetVoid();
  }

 private:
  // ---- structure ---------------------------------------------------------------------------

  // for (i = begin; i < end; i += step) body(i), the index in an alloca (promoted by mem2reg).
  void loop(Value* begin, Value* end, Value* step, const char* name,
            llvm::function_ref<void(Value*)> body) {
    llvm::LLVMContext& ctx = m_.getContext();
    llvm::AllocaInst* var = entry_alloca(begin->getType(), name);
    b_.CreateStore(begin, var);
    BasicBlock* head = BasicBlock::Create(ctx, fmt::format("{}.head", name), fn_);
    BasicBlock* loop_body = BasicBlock::Create(ctx, fmt::format("{}.body", name), fn_);
    BasicBlock* done = BasicBlock::Create(ctx, fmt::format("{}.done", name), fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    Value* i = b_.CreateLoad(begin->getType(), var);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), loop_body, done);
    b_.SetInsertPoint(loop_body);
    body(i);
    b_.CreateStore(b_.CreateAdd(i, step), var);
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  void if_then(Value* cond, llvm::function_ref<void()> then) {
    if_else(cond, then, [] {});
  }

  void if_else(Value* cond, llvm::function_ref<void()> then, llvm::function_ref<void()> other) {
    em_.if_else(cond, then, other);
  }

  llvm::AllocaInst* entry_alloca(llvm::Type* ty, const llvm::Twine& name) {
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    return eb.CreateAlloca(ty, nullptr, name);
  }

  Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  Value* i32(int v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  Value* ceil_div(Value* a, Value* b) {
    return b_.CreateUDiv(b_.CreateAdd(a, b_.CreateSub(b, i64(1))), b);
  }

  // ---- set-up ------------------------------------------------------------------------------

  void check_config() const {
    if (wgmma_) {
      // Ping-pong: a warpgroup holds the whole tile, at most 128 accumulators a thread.
      const bool rows = pingpong_ ? cfg_.warps_m == 8 && cfg_.tile_m / 64 * cfg_.tile_n / 2 <= 128
                                  : cfg_.warps_m * 16 == cfg_.tile_m;
      internal_check(cfg_.tile_k * elem_bytes_ == 128 && cfg_.tile_m % 64 == 0 && rows &&
                         cfg_.warps_n == 1 && cfg_.tile_n % 64 == 0 && cfg_.tile_n <= 256 &&
                         cfg_.stages >= 3,
                     "contraction: a wgmma config takes 128-byte rows of K, one warpgroup "
                     "per 64 rows (or per tile, ping-pong) and N up to 256");
    }
    internal_check(!c_.tf32 || (c_.a.k_major() && c_.b.k_major() && dtype_ == DType::f32),
                   "contraction: tf32 operands are f32 with K contiguous");
    internal_check(!c_.fma() || (!cfg_.wgmma && !cfg_.tma && cfg_.tile_m / cfg_.warps_m % 32 == 0 &&
                                 cfg_.tile_n / cfg_.warps_n % 32 == 0),
                   "contraction: f32 on CUDA cores takes mma.sync-shaped configs, warp tiles of "
                   "multiples of 32");
    internal_check(!cfg_.tma || (cfg_.wgmma && cfg_.math_threads() == 256),
                   "contraction: a TMA config is a wgmma config of two MMA warpgroups");
    internal_check(!cfg_.pingpong || cfg_.tma, "contraction: ping-pong is a TMA config");
    internal_check(!cfg_.split || (cfg_.tma && !cfg_.pingpong && cfg_.cluster <= 1 &&
                                   !cfg_.smem_epilogue && !cfg_.tma_store),
                   "contraction: split-K is a TMA config without ping-pong, a cluster or an "
                   "epilogue through shared memory (its fold runs each warp's part alone)");
    internal_check(cfg_.cluster <= 1 || (cfg_.tma && !cfg_.pingpong && cfg_.cluster == 2 &&
                                         cfg_.tile_n % (64 * cfg_.cluster) == 0),
                   "contraction: a cluster is two blocks of a TMA config without ping-pong, "
                   "sharing B's tile in whole 64-column boxes");
    internal_check(!cfg_.smem_epilogue ||
                       (specialized_ && cfg_.tile_n % ContractionConfig::kEpilogueColumns == 0),
                   "contraction: a staged epilogue is a warp-specialized config's, over whole "
                   "chunks of columns");
    const int wm = cfg_.tile_m / cfg_.warps_m, wn = cfg_.tile_n / cfg_.warps_n;
    internal_check((pingpong_ || wm % 16 == 0) && wn % 16 == 0 && cfg_.tile_k % k_per_mma_ == 0 &&
                       cfg_.stages >= 2,
                   "contraction: warp tiles must be multiples of 16 x 16");
    for (int mn : {cfg_.tile_m, cfg_.tile_n}) {
      // Both layouts of each operand: chunks per row of 4 or a multiple of 8 (the swizzle),
      // and chunks that the block's threads share out evenly.
      const int k_major = cfg_.tile_k * elem_bytes_ / kChunkBytes;
      const int mn_major = mn * elem_bytes_ / kChunkBytes;
      internal_check((k_major == 4 || k_major % 8 == 0) && (mn_major == 4 || mn_major % 8 == 0),
                     "contraction: tiles must be rows of 4 or 8k chunks");
      const int chunks = mn * cfg_.tile_k * elem_bytes_ / kChunkBytes;
      internal_check(chunks % cfg_.math_threads() == 0 &&
                         (!cfg_.tma || chunks % ContractionConfig::kProducerThreads == 0),
                     "contraction: a tile's chunks must share out over the threads");
    }
  }

  // The entry's tensor maps (every image's, contraction_tensor_maps): A's and B's, then the
  // output's with a TMA store.
  int tensor_maps() const {
    return cfg_.tma ? static_cast<int>(kOperands) + (store_param_ >= 0 ? 1 : 0) : 0;
  }
  // Tensor map `i` (CUtensorMap by value: its parameter's address, i64), and the flag after
  // the maps (manifest.h).
  Value* tensor_map(int i) {
    return b_.CreatePtrToInt(fn_->getArg(fn_->arg_size() - 1 - tensor_maps() + i), b_.getInt64Ty());
  }
  Value* map_flag(int bit) {
    Value* flag = fn_->getArg(fn_->arg_size() - 1);
    return b_.CreateICmpNE(b_.CreateAnd(flag, i64(bit)), i64(0));
  }

  int param_index(const std::string& name) const {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i]->name == name) return static_cast<int>(i);
    }
    internal_check(false, "contraction: no such parameter");
    return -1;
  }
  Value* param(const std::string& name) { return fn_->getArg(param_index(name)); }

  Value* dim(const Dim& d) {
    if (d.is_fixed()) return i64(d.value());
    for (size_t i = 0; i < symbols_.size(); ++i) {
      if (symbols_[i] == d.name()) return fn_->getArg(static_cast<unsigned>(params_.size() + i));
    }
    internal_check(false, "contraction: unknown symbol");
    return nullptr;
  }

  // Row-major strides (elements) of a tensor.
  std::vector<Value*> strides(const TensorDecl& t) {
    std::vector<Value*> s(t.shape.size());
    Value* acc = i64(1);
    for (size_t d = t.shape.size(); d-- > 0;) {
      s[d] = acc;
      acc = b_.CreateMul(acc, dim(t.shape[d]));
    }
    return s;
  }
  // The strides of parameter `p`, computed once in the entry block (set_up).
  const std::vector<Value*>& strides_of(int p) const { return strides_[static_cast<size_t>(p)]; }

  void set_up() {
    for (const TensorDecl* t : params_) strides_.push_back(strides(*t));
    const size_t rank = sk_.space.size();
    for (size_t d = 0; d + 2 < rank; ++d) batch_dims_.push_back(dim(sk_.space[d]));
    m_extent_ = dim(sk_.space[rank - 2]);
    n_extent_ = dim(sk_.space[rank - 1]);
    k_extent_ = dim(sk_.reduced.at(0));
    Value* batches = i64(1);
    for (Value* v : batch_dims_) batches = b_.CreateMul(batches, v);
    // With a cluster, a "tile" of the walk (place) is the cluster's: cluster_ blocks' rows.
    tiles_m_ = ceil_div(m_extent_, i64(int64_t{cfg_.tile_m} * cluster_));
    tiles_n_ = ceil_div(n_extent_, i64(cfg_.tile_n));
    per_batch_ = b_.CreateMul(tiles_m_, tiles_n_);
    tiles_ = b_.CreateMul(per_batch_, batches);
    k_tiles_ = ceil_div(k_extent_, i64(cfg_.tile_k));
    units_ = tiles_;
    k_begin_ = i64(0);
    k_steps_ = k_tiles_;
    if (split_) {
      // The workspace and the phase follow the symbols (manifest.h): phase 0 multiplies a
      // slice of each tile's reduced steps into a record, phase 1 folds them. Both run on the
      // same grid, S blocks per tile (at least 1).
      const auto first = static_cast<unsigned>(params_.size() + symbols_.size());
      workspace_ = fn_->getArg(first);
      folding_ = b_.CreateICmpNE(fn_->getArg(first + 1), i64(0));
      Value* grid = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
      Value* some = b_.CreateSelect(b_.CreateICmpEQ(tiles_, i64(0)), i64(1), tiles_);
      Value* per_tile = b_.CreateUDiv(grid, some);
      split_s_ = b_.CreateSelect(b_.CreateICmpEQ(per_tile, i64(0)), i64(1), per_tile);
      units_ = b_.CreateMul(tiles_, split_s_);
    }

    Value* tid = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    tid_ = b_.CreateTrunc(tid, b_.getInt32Ty());
    copy_tid_ = tid_;
    copy_threads_ = cfg_.math_threads();
    lane_ = b_.CreateAnd(tid_, i32(31));
    // The warp's index broadcast from its lane 0: the same in every lane, which ptxas can tell
    // only so (tid / 32 is a per-thread value to it). What derives from it (the warpgroup's
    // rows of A, so every wgmma descriptor) then lives in uniform registers, as CUTLASS's
    // canonical_warp_idx_sync does; computed per thread, each descriptor took an R2UR and its
    // arithmetic in the vector ALU at every step (Nsight Compute on an H200: 1.65x cuBLAS's
    // instructions issued, bench/results/2026-11-29-h200-dependent-launch call 6). Broadcast,
    // the same binary's GEMMs ran 0.6-2.9% faster at large shapes, 3000 x 5000 x 1000 level
    // (bench/results/2026-11-29-h200-uniform-warp, call 1).
    Value* warp = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, {},
                                     {i32(-1), b_.CreateLShr(tid_, i32(5)), i32(0), i32(31)});
    warp_ = warp;
    warp_group_ = b_.CreateLShr(warp, i32(2));
    warp_m_ = b_.CreateUDiv(warp, i32(cfg_.warps_n));
    warp_n_ = b_.CreateURem(warp, i32(cfg_.warps_n));
    if (pingpong_) {
      // Warp w of its warpgroup holds rows 16 w .. of each 64-row slab of the tile.
      slabs_ = cfg_.tile_m / 64;
      slab_rows_ = 64;
      warp_row0_ = b_.CreateMul(b_.CreateAnd(warp, i32(3)), i32(16));
    } else {
      const int wm = cfg_.tile_m / cfg_.warps_m;
      slabs_ = wm / 16;
      slab_rows_ = 16;
      warp_row0_ = b_.CreateMul(warp_m_, i32(wm));
    }

    set_operand(a_, c_.a, m_extent_, cfg_.tile_m, 0);
    set_operand(b_op_, c_.b, n_extent_, cfg_.tile_n, cfg_.tile_m * cfg_.tile_k * elem_bytes_);
    stage_bytes_ = (cfg_.tile_m + cfg_.tile_n) * cfg_.tile_k * elem_bytes_;
  }

  void set_operand(Operand& o, const ContractionOperand& info, Value* extent_mn, int tile_mn,
                   int smem_offset) {
    const int p = param_index(info.tensor);
    const TensorDecl& t = *params_[static_cast<size_t>(p)];
    const std::vector<Value*>& st = strides_of(p);
    o.info = &info;
    o.base = param(info.tensor);
    o.stride_mn = st[info.mn_dim];
    o.stride_k = st[info.k_dim];
    for (auto [d, out] : info.batch) o.batch.emplace_back(st[d], out);
    o.extent_mn = extent_mn;
    o.smem_offset = smem_offset;
    const int per_row = info.k_major() ? cfg_.tile_k : tile_mn;
    o.rows = info.k_major() ? tile_mn : cfg_.tile_k;
    o.chunks = per_row * elem_bytes_ / kChunkBytes;
    Value* contiguous = dim(t.shape.back());
    const int vec = kChunkBytes / elem_bytes_;
    Value* addr = b_.CreatePtrToInt(o.base, b_.getInt64Ty());
    o.vector_ok = b_.CreateAnd(b_.CreateICmpEQ(b_.CreateURem(contiguous, i64(vec)), i64(0)),
                               b_.CreateICmpEQ(b_.CreateAnd(addr, i64(kChunkBytes - 1)), i64(0)));
  }

  // ---- one tile ----------------------------------------------------------------------------

  // Sets m0_, n0_ and the batch (coordinates, operand offsets) of tile t: its batch, then
  // (tm, tn) in bands of `group` tile rows (raster 0: down M within a band; 1: the same with
  // M and N exchanged).
  void place(Value* t) {
    Value* bidx = b_.CreateUDiv(t, per_batch_);
    Value* r = b_.CreateURem(t, per_batch_);
    Value* major = cfg_.raster == 0 ? tiles_m_ : tiles_n_;
    Value* minor = cfg_.raster == 0 ? tiles_n_ : tiles_m_;
    Value* band_tiles = b_.CreateMul(i64(cfg_.group), minor);
    Value* first = b_.CreateMul(b_.CreateUDiv(r, band_tiles), i64(cfg_.group));
    Value* left = b_.CreateSub(major, first);
    Value* size = b_.CreateSelect(b_.CreateICmpULT(left, i64(cfg_.group)), left, i64(cfg_.group));
    Value* in_band = b_.CreateURem(r, band_tiles);
    Value* t_major = b_.CreateAdd(first, b_.CreateURem(in_band, size));
    Value* t_minor = b_.CreateUDiv(in_band, size);
    Value* tm = cfg_.raster == 0 ? t_major : t_minor;
    Value* tn = cfg_.raster == 0 ? t_minor : t_major;
    m0_ = b_.CreateMul(tm, i64(int64_t{cfg_.tile_m} * cluster_));
    if (cluster_ > 1) {
      m0_ =
          b_.CreateAdd(m0_, b_.CreateZExt(b_.CreateMul(rank_, i32(cfg_.tile_m)), b_.getInt64Ty()));
    }
    n0_ = b_.CreateMul(tn, i64(cfg_.tile_n));
    batch_coords_.assign(batch_dims_.size(), nullptr);
    for (size_t d = batch_dims_.size(); d-- > 0;) {
      batch_coords_[d] = b_.CreateURem(bidx, batch_dims_[d]);
      bidx = b_.CreateUDiv(bidx, batch_dims_[d]);
    }
    a_batch_ = batch_offset(a_);
    b_batch_ = batch_offset(b_op_);
  }

  // Places unit u of the walk: tile u, or with split-K slice u % S of tile u / S, its reduced
  // steps k_begin_ .. k_begin_ + k_steps_ - 1 (S slices of k_tiles_ / S steps, some one more;
  // none when S > k_tiles_: the record holds zeros) and its record u.
  void place_unit(Value* u) {
    if (!split_) {
      place(u);
      return;
    }
    Value* slice = b_.CreateURem(u, split_s_);
    place(b_.CreateUDiv(u, split_s_));
    record_ = u;
    k_begin_ = b_.CreateUDiv(b_.CreateMul(slice, k_tiles_), split_s_);
    Value* end = b_.CreateUDiv(b_.CreateMul(b_.CreateAdd(slice, i64(1)), k_tiles_), split_s_);
    k_steps_ = b_.CreateSub(end, k_begin_);
  }

  // ---- split-K records -----------------------------------------------------------------------

  // A record holds one tile's f32 accumulators, tile_m x tile_n words, as the MMA threads hold
  // them: accumulator a of MMA thread i at word (a / 4 x threads + i) x 4 + a % 4, so that
  // each thread writes and reads 16 bytes at a time and a warp's 512 contiguous bytes.
  // Layout-agnostic: phase 1 runs the same image, its threads holding the same elements.
  Value* record_address(Value* record, size_t a) {
    internal_check(acc_.size() % 4 == 0 &&
                       acc_.size() * static_cast<size_t>(cfg_.math_threads()) ==
                           static_cast<size_t>(cfg_.tile_m) * static_cast<size_t>(cfg_.tile_n),
                   "contraction: a split record holds each accumulator of the tile once");
    Value* word = b_.CreateAdd(
        b_.CreateMul(record, i64(int64_t{cfg_.tile_m} * cfg_.tile_n)),
        b_.CreateMul(b_.CreateAdd(i64(static_cast<int64_t>(a / 4) * cfg_.math_threads()),
                                  b_.CreateZExt(tid_, b_.getInt64Ty())),
                     i64(4)));
    return b_.CreateInBoundsGEP(b_.getFloatTy(), workspace_, {word});
  }

  // Phase 0: the placed unit's accumulators into its record.
  void store_record() {
    llvm::Type* v4 = llvm::FixedVectorType::get(b_.getFloatTy(), 4);
    for (size_t a = 0; a < acc_.size(); a += 4) {
      Value* v = llvm::PoisonValue::get(v4);
      for (unsigned e = 0; e < 4; ++e) {
        v = b_.CreateInsertElement(v, b_.CreateLoad(b_.getFloatTy(), acc_[a + e]), e);
      }
      b_.CreateAlignedStore(v, record_address(record_, a), llvm::Align(16));
    }
  }

  // Phase 1: the accumulators of tile t, the sum of its S records in order (deterministic).
  // The loads of kRecordBatch records are issued before their sums (a record at a time, each
  // warp waited out an L2 round trip per record); past the last record the batch reads the
  // last one again and adds nothing.
  static constexpr int kRecordBatch = 4;
  void load_records(Value* t) {
    zero_accumulators();
    llvm::Type* v4 = llvm::FixedVectorType::get(b_.getFloatTy(), 4);
    Value* first = b_.CreateMul(t, split_s_);
    Value* last = b_.CreateSub(split_s_, i64(1));
    loop(i64(0), split_s_, i64(kRecordBatch), "records", [&](Value* s0) {
      std::vector<std::vector<Value*>> batch(kRecordBatch);
      for (int r = 0; r < kRecordBatch; ++r) {
        Value* s = b_.CreateAdd(s0, i64(r));
        s = b_.CreateSelect(b_.CreateICmpULT(s, split_s_), s, last);
        Value* record = b_.CreateAdd(first, s);
        for (size_t a = 0; a < acc_.size(); a += 4) {
          batch[static_cast<size_t>(r)].push_back(
              b_.CreateAlignedLoad(v4, record_address(record, a), llvm::Align(16)));
        }
      }
      for (int r = 0; r < kRecordBatch; ++r) {
        auto add = [&] {
          for (size_t a = 0; a < acc_.size(); a += 4) {
            Value* v = batch[static_cast<size_t>(r)][a / 4];
            for (unsigned e = 0; e < 4; ++e) {
              Value* sum = b_.CreateFAdd(b_.CreateLoad(b_.getFloatTy(), acc_[a + e]),
                                         b_.CreateExtractElement(v, e));
              b_.CreateStore(sum, acc_[a + e]);
            }
          }
        };
        if (r == 0) {
          add();
        } else {
          if_then(b_.CreateICmpULT(b_.CreateAdd(s0, i64(r)), split_s_), add);
        }
      }
    });
  }

  // Phase 1: on the same grid as phase 0, unit u folds the part of tile u / S held by the MMA
  // warps w with w % S = u % S (parts past the warps have none): up to 8 SMs read a tile's
  // records, not one (a GEMM of 256 x 256 x 65536, S = 33: 46.8 us against 48.3 with one block
  // per tile; H200, bench/results/2026-11-30-h200-split-k calls 1-2). Each warp's epilogue
  // stands alone (the register epilogue: no block or warpgroup barriers, check_config).
  void fold_units(Value* bid, llvm::function_ref<void(Value*)> stored) {
    Value* warp = b_.CreateZExt(warp_, b_.getInt64Ty());
    llvm::AllocaInst* ordinal = entry_alloca(b_.getInt64Ty(), "fold.ordinal");
    b_.CreateStore(i64(0), ordinal);
    loop(bid, units_, nblocks_, "fold", [&](Value* u) {
      Value* j = b_.CreateLoad(b_.getInt64Ty(), ordinal);
      Value* t = b_.CreateUDiv(u, split_s_);
      if_then(b_.CreateICmpEQ(b_.CreateURem(warp, split_s_), b_.CreateURem(u, split_s_)), [&] {
        place(t);
        wait_for_earlier_steps();
        load_records(t);
        stored(j);
      });
      b_.CreateStore(b_.CreateAdd(j, i64(1)), ordinal);
    });
  }

  // Phase 1 of the MMA warps' (not warp-specialized) images.
  void fold(Value* bid) {
    fold_units(bid, [&](Value*) { epilogue(); });
  }

  // The steps copied ahead of the math: stages - 1 (mma.sync) or stages - 2 (wgmma, one
  // group of MMAs in flight).
  int ahead() const { return wgmma_ ? cfg_.stages - 2 : cfg_.stages - 1; }

  // Steps 0 .. ahead() - 1 of the placed tile into stages 0 .., one commit group each.
  void prologue() {
    for (int s = 0; s < ahead(); ++s) {
      if_then(b_.CreateICmpSLT(i64(s), k_steps_),
              [&] { load_step(i32(s), b_.CreateAdd(k_begin_, i64(s))); });
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
    }
  }

  // Tile t, whose prologue was issued.
  void tile(Value* t) {
    place_unit(t);
    zero_accumulators();

    mainloop();
    wait_for_earlier_steps();
    if (split_) {
      store_record();
    } else {
      epilogue();
    }
    // Every warp's reads of shared memory are done before the next tile's first steps refill
    // the stages. (Issuing them before this tile's epilogue instead was measured 2-4% slower
    // on an H200 at 4096^3 and 8192^3: bench/results/2026-11-24-h200-contractions/README.md.)
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
    barrier();
    Value* next = b_.CreateAdd(t, nblocks_);
    if_then(b_.CreateICmpSLT(next, units_), [&] {
      place_unit(next);
      prologue();
    });
  }

  // The accumulators, zeroed (allocas: mem2reg keeps them in registers).
  void zero_accumulators() {
    const int nt = cfg_.tile_n / cfg_.warps_n / 8;
    acc_.assign(static_cast<size_t>(slabs_ * nt * 4), nullptr);
    for (size_t i = 0; i < acc_.size(); ++i) {
      acc_[i] = entry_alloca(b_.getFloatTy(), "acc");
      b_.CreateStore(llvm::ConstantFP::get(b_.getFloatTy(), 0.0), acc_[i]);
    }
  }

  // Step kt + ahead() is copied while step kt's math runs. With mma.sync, ahead() = stages - 1:
  // the stage it refills was read by step kt - 1, which every warp finished before the
  // barrier. With wgmma, ahead() = stages - 2 and step kt - 1's MMAs may still run (one group
  // in flight): the stage it refills, (kt - 2) % stages, was read by step kt - 2, complete.
  void mainloop() {
    const int ahead = this->ahead();
    loop(i64(0), k_steps_, i64(1), "kstep", [&](Value* kt) {
      // Step kt's copies have landed (at most ahead - 1 younger groups pending); for wgmma,
      // visible to the tensor cores' (async) reads of shared memory.
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {i32(ahead - 1)});
      if (wgmma_) asm_void("fence.proxy.async.shared::cta;");
      barrier();
      Value* next = b_.CreateAdd(kt, i64(ahead));
      if_then(b_.CreateICmpSLT(next, k_steps_), [&] {
        load_step(b_.CreateTrunc(b_.CreateURem(next, i64(cfg_.stages)), b_.getInt32Ty()),
                  b_.CreateAdd(k_begin_, next));
      });
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
      Value* stage = b_.CreateTrunc(b_.CreateURem(kt, i64(cfg_.stages)), b_.getInt32Ty());
      if (wgmma_) {
        wgmma_math(stage);
        asm_void("wgmma.wait_group.sync.aligned 1;");
      } else {
        math(stage);
      }
    });
    if (wgmma_) asm_void("wgmma.wait_group.sync.aligned 0;");
  }

  // Inline PTX is convergent: the `.sync.aligned` instructions (wgmma, setmaxnreg) must be
  // executed at the same place by every thread of the warp, and without the attribute LLVM
  // may copy one into both arms of a branch on the lane (seen: a ping-pong kernel's
  // wgmma.wait_group duplicated around a lane-0 mbarrier arrive hung on an H200).
  llvm::CallInst* convergent(llvm::CallInst* call) {
    call->addFnAttr(llvm::Attribute::Convergent);
    return call;
  }

  // Where the kernel's operands are the spec's inputs, nothing before the epilogue touches
  // what an earlier step wrote: a dependent launch (make_dependent) copies and multiplies the
  // first tiles while the step before it ends (an RMSNorm's row statistic) and waits here, at
  // every tile (at once after the first).
  void wait_for_earlier_steps() {
    if (defer_wait_) emit_dependency_wait(b_);
  }

  void asm_void(const char* text) { emit_asm_statement(b_, text); }

  // ---- warp-specialized (TMA) ---------------------------------------------------------------

  // The block's last warpgroup produces: it waits until a stage is free (its `empty` barrier),
  // then fills it with TMA copies that complete its `full` barrier (or, without tensor maps,
  // copies it itself and arrives there). The MMA warpgroups wait for a stage to be full, issue
  // its wgmmas, and free the stage once they are complete (one group in flight); then the
  // epilogue, while the producer already fills the next tile's stages. Step i of the block
  // (counting over its tiles) uses stage i % stages in phase (i / stages) % 2.
  //
  // With a cluster (cluster_ blocks along M), the cluster walks tiles of cluster_ x tile_m rows,
  // each block the rows of its rank, and each block's producer copies 1 / cluster_ of B's tile
  // into every block of the cluster at once (TMA multicast), so that L2 serves B's tile once
  // per cluster. A block's full barrier then completes with the bytes of every producer's
  // copies, and its stage is free once the MMA warps of every block have freed it there (each
  // arrives at the empty barrier of every block of the cluster): a producer writes the stage
  // of each block.
  void run_specialized(Value* bid) {
    if (cluster_ > 1) {
      bid = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_clusterid_x);
      nblocks_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_x);
      rank_ = b_.CreateTrunc(em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank),
                             b_.getInt32Ty());
    }
    barriers_ =
        b_.CreateAdd(b_.CreatePtrToInt(smem_, b_.getInt32Ty()), i32(cfg_.stages * stage_bytes_));
    maps_ok_ = map_flag(1);
    if (tma_store_) store_ok_ = map_flag(2);
    const int math = cfg_.math_threads();
    if_then(b_.CreateICmpEQ(tid_, i32(0)), [&] {
      // A full stage: the producer's expect_tx arrival (TMA), or each producer thread's.
      Value* producers =
          b_.CreateSelect(maps_ok_, i32(1), i32(ContractionConfig::kProducerThreads));
      for (int s = 0; s < cfg_.stages; ++s) {
        mbarrier_init(full_barrier(i32(s)), producers);
        // Lane 0 of each MMA warp that reads the stage: both warpgroups', or one's.
        mbarrier_init(empty_barrier(i32(s)), i32(pingpong_ ? 4 : math / 32 * cluster_));
      }
      if (pingpong_) {
        for (int w = 0; w < 2; ++w) mbarrier_init(order_barrier(i32(w)), i32(4));
      }
      asm_void("fence.mbarrier_init.release.cluster;");
    });
    // Every block's barriers are initialized before any block arrives at them or copies into
    // its stages.
    block_or_cluster_barrier();
    if_else(
        b_.CreateICmpUGE(tid_, i32(math)),
        [&] {
          asm_void(fmt::format("setmaxnreg.dec.sync.aligned.u32 {};", kProducerRegisters).c_str());
          // Split-K's phase 1 copies nothing.
          if (split_) {
            if_then(b_.CreateNot(folding_), [&] { produce(bid); });
          } else {
            produce(bid);
          }
        },
        [&] {
          asm_void(fmt::format("setmaxnreg.inc.sync.aligned.u32 {};", kConsumerRegisters).c_str());
          if (split_) {
            if_else(
                folding_, [&] { fold_specialized(bid); }, [&] { consume(bid); });
          } else {
            consume(bid);
          }
        });
    // A block of a cluster stays until every block is done with its barriers (the others'
    // MMA warps arrive at its empty barriers).
    if (cluster_ > 1) block_or_cluster_barrier();
    b_.CreateRetVoid();
  }

  // Every thread of the block, or of the cluster.
  void block_or_cluster_barrier() {
    if (cluster_ == 1) {
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
      return;
    }
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive, {}, {});
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait, {}, {});
  }

  // Ping-pong: warpgroup w's mainloop of its latest tile has waited for all its stages (lane 0
  // of each of its warps arrives).
  Value* order_barrier(Value* w) {
    return b_.CreateAdd(barriers_, b_.CreateAdd(b_.CreateMul(w, i32(8)), i32(16 * cfg_.stages)));
  }
  Value* full_barrier(Value* stage) { return b_.CreateAdd(barriers_, b_.CreateMul(stage, i32(8))); }
  Value* empty_barrier(Value* stage) {
    return b_.CreateAdd(barriers_, b_.CreateMul(b_.CreateAdd(stage, i32(cfg_.stages)), i32(8)));
  }

  // `v` (i32) through an inline PTX move with side effects, which LLVM does not hoist out of
  // a loop: what is computed from it stays in the loop.
  Value* opaque(Value* v) {
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty()}, false);
    return b_.CreateCall(llvm::InlineAsm::get(fty, "mov.u32 $0, $1;", "=r,r", true), {v});
  }

  // Calls inline PTX `text` with i32/i64 operands and no result.
  void asm_call(const std::string& text, const std::string& constraints,
                const std::vector<Value*>& args) {
    std::vector<llvm::Type*> types;
    for (Value* v : args) types.push_back(v->getType());
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
    convergent(
        b_.CreateCall(llvm::InlineAsm::get(fty, text, constraints + ",~{memory}", true), args));
  }
  void mbarrier_init(Value* bar, Value* count) {
    asm_call("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", {bar, count});
  }
  void mbarrier_arrive(Value* bar) {
    asm_call("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [$0];\n}", "r", {bar});
  }
  // Arrives at barrier `bar` (this block's shared address) of block `rank` of the cluster, with
  // the default (release, CTA-scope) semantics: what it orders are the arriving warp's reads of
  // the stage, which wgmma.wait_group completed. A cluster-scope release fences the warp's memory
  // operations at every arrival: Nsight Compute showed the MMA warps stalled on it (membar)
  // 46% of the time, the GEMM 1.8x slower (H200, bench/results/2026-11-26-h200-cluster).
  void mbarrier_arrive_in(Value* bar, Value* rank) {
    asm_call(
        "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
        "r,r", {bar, rank});
  }
  void mbarrier_expect_tx(Value* bar, int bytes) {
    asm_call(fmt::format("{{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared::cta.b64 state, "
                         "[$0], {};\n}}",
                         bytes),
             "r", {bar});
  }
  // Waits until the phase of `bar` with parity `parity` (i32 0 or 1) has completed.
  void mbarrier_wait(Value* bar, Value* parity) {
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), b_.getInt32Ty()}, false);
    auto* try_wait = llvm::InlineAsm::get(
        fty,
        "{\n.reg .pred done;\nmbarrier.try_wait.parity.shared::cta.b64 done, [$1], $2;\n"
        "selp.u32 $0, 1, 0, done;\n}",
        "=r,r,r,~{memory}", true);
    llvm::LLVMContext& ctx = m_.getContext();
    BasicBlock* head = BasicBlock::Create(ctx, "wait", fn_);
    BasicBlock* done = BasicBlock::Create(ctx, "waited", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    Value* ok = b_.CreateCall(try_wait, {bar, parity});
    b_.CreateCondBr(b_.CreateICmpNE(ok, i32(0)), done, head);
    b_.SetInsertPoint(done);
  }

  // Stage and phase parity of the block's step `it` (i64).
  std::pair<Value*, Value*> stage_phase(Value* it) {
    Value* stage = b_.CreateTrunc(b_.CreateURem(it, i64(cfg_.stages)), b_.getInt32Ty());
    Value* phase =
        b_.CreateTrunc(b_.CreateAnd(b_.CreateUDiv(it, i64(cfg_.stages)), i64(1)), b_.getInt32Ty());
    return {stage, phase};
  }

  void produce(Value* bid) {
    const int math = cfg_.math_threads();
    copy_tid_ = b_.CreateSub(tid_, i32(math));
    copy_threads_ = ContractionConfig::kProducerThreads;
    // With tensor maps one thread issues every copy; without, the warpgroup shares them.
    Value* active = b_.CreateOr(b_.CreateNot(maps_ok_), b_.CreateICmpEQ(tid_, i32(math)));
    if_then(active, [&] {
      llvm::AllocaInst* it = entry_alloca(b_.getInt64Ty(), "pstep.count");
      b_.CreateStore(i64(0), it);
      loop(bid, units_, nblocks_, "ptile", [&](Value* t) {
        place_unit(t);
        loop(i64(0), k_steps_, i64(1), "pstep", [&](Value* kt) {
          Value* n = b_.CreateLoad(b_.getInt64Ty(), it);
          auto [stage, phase] = stage_phase(n);
          mbarrier_wait(empty_barrier(stage), b_.CreateXor(phase, i32(1)));
          Value* full = full_barrier(stage);
          if_else(
              maps_ok_,
              [&] {
                mbarrier_expect_tx(full, stage_bytes_);
                Value* k0 = b_.CreateMul(b_.CreateAdd(k_begin_, kt), i64(cfg_.tile_k));
                tma_operand(a_, 0, stage, k0, m0_, full);
                tma_operand(b_op_, 1, stage, k0, n0_, full);
              },
              [&] {
                // The copies land, are made visible to the tensor cores' (async proxy)
                // reads, and only then the stage counts as full.
                load_step(stage, b_.CreateAdd(k_begin_, kt));
                b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
                asm_void("fence.proxy.async.shared::cta;");
                mbarrier_arrive(full);
              });
          b_.CreateStore(b_.CreateAdd(n, i64(1)), it);
        });
      });
    });
  }

  // TMA copies of operand o's tile for the reduced indices k0 .. into `stage`, through tensor
  // map `map` (contraction_tensor_maps: one box for a K-major operand, one per 64 M/N
  // indices for the others). With a cluster, B's tile is shared: this block copies the rows
  // (K-major: a box of tile_n / cluster_ rows) or boxes of its rank into every block.
  void tma_operand(const Operand& o, int map, Value* stage, Value* k0, Value* mn0, Value* full) {
    const ContractionOperand& info = *o.info;
    const int rank = info.rank;
    if (rank > static_cast<int>(bundle::kMaxTensorMapRank)) return;  // never encoded: no maps
    Value* tmap = tensor_map(map);
    const bool shared = cluster_ > 1 && &o == &b_op_;
    const int boxes = info.k_major() ? 1 : (&o == &a_ ? cfg_.tile_m : cfg_.tile_n) / 64;
    Value* dst0 =
        b_.CreateAdd(b_.CreatePtrToInt(smem_, b_.getInt32Ty()),
                     b_.CreateAdd(b_.CreateMul(stage, i32(stage_bytes_)), i32(o.smem_offset)));
    int own_boxes = boxes;
    if (shared && info.k_major()) {
      // Rows rank * tile_n / cluster_ .. of the tile, 128 bytes each.
      const int rows = cfg_.tile_n / cluster_;
      dst0 = b_.CreateAdd(dst0, b_.CreateMul(rank_, i32(rows * 128)));
      mn0 = b_.CreateAdd(mn0, b_.CreateZExt(b_.CreateMul(rank_, i32(rows)), b_.getInt64Ty()));
    } else if (shared) {
      own_boxes = boxes / cluster_;
    }
    std::vector<std::string> coords;
    for (int d = 0; d < rank; ++d) coords.push_back(fmt::format("${}", 2 + d));
    const std::string text = fmt::format(
        "cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{} "
        "[$0], [$1, {{{}}}], [${}]{};",
        rank, shared ? ".multicast::cluster" : "", fmt::join(coords, ", "), 2 + rank,
        shared ? fmt::format(", ${}", 3 + rank) : "");
    std::string cons = "r,l";
    for (int d = 0; d < rank; ++d) cons += ",r";
    cons += shared ? ",r,h" : ",r";
    for (int own = 0; own < own_boxes; ++own) {
      // With a cluster and boxes along M/N, this block's are rank * own_boxes ...
      Value* box_v = i32(own);
      if (shared && !info.k_major()) {
        box_v = b_.CreateAdd(b_.CreateMul(rank_, i32(own_boxes)), i32(own));
      }
      std::vector<Value*> args{b_.CreateAdd(dst0, b_.CreateMul(box_v, i32(cfg_.tile_k * 128))),
                               tmap};
      // Coordinates, innermost dimension first.
      for (int d = 0; d < rank; ++d) {
        const int dim = rank - 1 - d;
        Value* c = nullptr;
        if (dim == info.k_dim) {
          c = k0;
        } else if (dim == info.mn_dim) {
          c = b_.CreateAdd(mn0, b_.CreateMul(b_.CreateZExt(box_v, b_.getInt64Ty()), i64(64)));
        } else {
          for (auto [bd, out] : info.batch) {
            if (bd == dim) c = batch_coords_[static_cast<size_t>(out)];
          }
        }
        args.push_back(b_.CreateTrunc(c, b_.getInt32Ty()));
      }
      args.push_back(full);
      if (shared) args.push_back(b_.getInt16(static_cast<uint16_t>((1u << cluster_) - 1)));
      asm_call(text, cons, args);
    }
  }

  // Each MMA warpgroup's tiles: all of the block's (both share each tile), or with ping-pong
  // every other one (tile ordinal j = w, w + 2, ...). Tile j's steps are the block's steps
  // j * k_tiles ... With ping-pong, warpgroup w starts waiting for tile j's stages only once
  // the other has waited for all of tile j - 1's (order barrier 1 - w, phase (j - 1) / 2):
  // a stage's full barrier is then at most one phase from the one awaited, which its parity
  // tells apart. That also hands the tensor cores from one mainloop to the next while the
  // finished warpgroup runs its epilogue.
  void consume(Value* bid) {
    Value* wg = warp_group_;
    const int64_t per = pingpong_ ? 2 : 1;
    Value* first = pingpong_ ? b_.CreateZExt(wg, b_.getInt64Ty()) : i64(0);
    llvm::AllocaInst* ordinal = entry_alloca(b_.getInt64Ty(), "tile.ordinal");
    b_.CreateStore(first, ordinal);
    Value* signals = b_.CreateICmpEQ(lane_, i32(0));
    auto release = [&](Value* n) {  // frees the stage of step n (in every block)
      if_then(signals, [&] {
        // This block's barrier directly, a cluster's other blocks' through their addresses.
        Value* empty = empty_barrier(stage_phase(n).first);
        mbarrier_arrive(empty);
        for (int r = 1; r < cluster_; ++r) {
          mbarrier_arrive_in(empty, b_.CreateURem(b_.CreateAdd(rank_, i32(r)), i32(cluster_)));
        }
      });
    };
    Value* start = b_.CreateAdd(bid, b_.CreateMul(first, nblocks_));
    // With split-K the units' steps differ: the steps consumed before, counted.
    llvm::AllocaInst* done = split_ ? entry_alloca(b_.getInt64Ty(), "steps.done") : nullptr;
    if (done) b_.CreateStore(i64(0), done);
    loop(start, units_, b_.CreateMul(nblocks_, i64(per)), "tile", [&](Value* t) {
      Value* j = b_.CreateLoad(b_.getInt64Ty(), ordinal);
      place_unit(t);
      zero_accumulators();
      if (pingpong_) {
        if_then(b_.CreateICmpUGT(j, i64(0)), [&] {
          Value* prev = b_.CreateSub(j, i64(1));
          mbarrier_wait(
              order_barrier(b_.CreateSub(i32(1), wg)),
              b_.CreateTrunc(b_.CreateAnd(b_.CreateLShr(prev, i64(1)), i64(1)), b_.getInt32Ty()));
        });
      }
      Value* n0 = split_ ? b_.CreateLoad(b_.getInt64Ty(), done) : b_.CreateMul(j, k_tiles_);
      loop(i64(0), k_steps_, i64(1), "kstep", [&](Value* kt) {
        Value* n = b_.CreateAdd(n0, kt);
        auto [stage, phase] = stage_phase(n);
        mbarrier_wait(full_barrier(stage), phase);
        wgmma_math(stage);
        // The step before this one's MMAs are complete: its stage is free.
        asm_void("wgmma.wait_group.sync.aligned 1;");
        if_then(b_.CreateICmpUGT(kt, i64(0)), [&] { release(b_.CreateSub(n, i64(1))); });
      });
      if (pingpong_) if_then(signals, [&] { mbarrier_arrive(order_barrier(wg)); });
      asm_void("wgmma.wait_group.sync.aligned 0;");
      if (split_) {
        // A slice may have no steps (S > k_tiles_): nothing to free then.
        if_then(b_.CreateICmpUGT(k_steps_, i64(0)),
                [&] { release(b_.CreateSub(b_.CreateAdd(n0, k_steps_), i64(1))); });
        b_.CreateStore(b_.CreateAdd(n0, k_steps_), done);
        wait_for_earlier_steps();
        store_record();
        b_.CreateStore(b_.CreateAdd(j, i64(per)), ordinal);
        return;
      }
      release(b_.CreateSub(b_.CreateAdd(n0, k_tiles_), i64(1)));
      wait_for_earlier_steps();
      stored_epilogue(j);
      b_.CreateStore(b_.CreateAdd(j, i64(per)), ordinal);
    });
    finish_stores();
  }

  // The epilogue of the MMA warpgroups' accumulators, `j` the warpgroup's tile ordinal.
  void stored_epilogue(Value* j) {
    auto stored = [&] {
      if (cfg_.smem_epilogue) {
        staged_epilogue();
      } else {
        epilogue();
      }
    };
    if (tma_store_) {
      if_else(
          store_ok_, [&] { tma_store_epilogue(j); }, stored);
    } else {
      stored();
    }
  }

  // The shared memory stays until the last TMA store has read it.
  void finish_stores() {
    if (tma_store_) {
      if_then(b_.CreateAnd(store_ok_, warpgroup_leader()),
              [&] { asm_void("cp.async.bulk.wait_group.read 0;"); });
    }
  }

  // Split-K's phase 1 on the MMA warpgroups (fold_units).
  void fold_specialized(Value* bid) {
    fold_units(bid, [&](Value* j) { stored_epilogue(j); });
    finish_stores();
  }

  // A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format") for shared memory at
  // `addr` (bytes, the shared window), with the 128-byte swizzle.
  Value* descriptor(Value* addr, int64_t lbo, int64_t sbo) {
    Value* a =
        b_.CreateLShr(b_.CreateAnd(b_.CreateZExt(addr, b_.getInt64Ty()), i64(0x3FFFF)), i64(4));
    const uint64_t fixed = (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
                           (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t{1} << 62);
    return b_.CreateOr(a, b_.getInt64(fixed));
  }

  // Descriptor of operand o's 64 (A) or tile_n (B) rows starting at M/N row `mn`, for the
  // reduced indices of MMA step ks (32 bytes of them: 16 of f16 or bf16, 8 of tf32) of stage
  // `stage`.
  Value* operand_descriptor(const Operand& o, Value* stage, int mn, int ks) {
    Value* base =
        b_.CreateAdd(b_.CreatePtrToInt(smem_, b_.getInt32Ty()),
                     b_.CreateAdd(b_.CreateMul(stage, i32(stage_bytes_)), i32(o.smem_offset)));
    if (o.info->k_major()) {
      // Rows of 128 bytes, eight-row atoms 1024 bytes apart; a step's reduced indices 32 bytes.
      return descriptor(b_.CreateAdd(base, i32(mn * 128 + ks * 32)), 16, 1024);
    }
    // Blocks of 64 M/N elements tile_k * 128 bytes apart (the leading offset), eight reduced
    // indices 1024 bytes apart (the stride offset); 16 reduced indices = 2048 bytes (f16 and
    // bf16 only: tf32 operands are K-major).
    return descriptor(b_.CreateAdd(base, i32((mn / 64) * cfg_.tile_k * 128 + ks * 2048)),
                      int64_t{cfg_.tile_k} * 128, 1024);
  }

  // The MMAs of one stage: for each 16 of tile_k (8 of tf32), wgmma m64 x tile_n x 16 (8) per
  // warpgroup.
  void wgmma_math(Value* stage) {
    const int regs = cfg_.tile_n / 2;  // f32 accumulators per thread
    const char* types = c_.tf32                ? "f32.tf32.tf32"
                        : dtype_ == DType::f16 ? "f32.f16.f16"
                                               : "f32.bf16.bf16";
    // tf32 takes no transposes (both operands K-major).
    const std::string transposes = c_.tf32 ? std::string()
                                           : fmt::format(", {}, {}", a_.info->k_major() ? 0 : 1,
                                                         b_op_.info->k_major() ? 0 : 1);
    // {$0, ..., $regs-1} the accumulators (outputs, tied to the inputs after the descriptors
    // and the scale-d flag).
    std::vector<std::string> dregs, outs_c, tied;
    for (int i = 0; i < regs; ++i) {
      dregs.push_back(fmt::format("${}", i));
      outs_c.push_back("=f");
      tied.push_back(std::to_string(i));
    }
    const std::string text = fmt::format(
        "{{\n.reg .pred p;\nsetp.ne.b32 p, ${}, 0;\nwgmma.mma_async.sync.aligned.m64n{}k{}.{} "
        "{{{}}}, ${}, ${}, p, 1, 1{};\n}}",
        regs + 2, cfg_.tile_n, k_per_mma_, types, fmt::join(dregs, ", "), regs, regs + 1,
        transposes);
    const std::string cons =
        fmt::format("{},l,l,r,{}", fmt::join(outs_c, ","), fmt::join(tied, ","));
    std::vector<llvm::Type*> outs(static_cast<size_t>(regs), b_.getFloatTy());
    std::vector<llvm::Type*> ins{b_.getInt64Ty(), b_.getInt64Ty(), b_.getInt32Ty()};
    ins.insert(ins.end(), outs.begin(), outs.end());
    auto* fty = llvm::FunctionType::get(llvm::StructType::get(m_.getContext(), outs), ins, false);
    auto* mma = llvm::InlineAsm::get(fty, text, cons, /*hasSideEffects=*/true);
    // Warpgroup w owns rows 64 w ..: its warps are 4 w .. 4 w + 3. With ping-pong it owns
    // every slab of 64 rows, each with its own accumulators.
    Value* wg = b_.CreateLShr(warp_m_, i32(2));
    asm_void("wgmma.fence.sync.aligned;");
    for (int ks = 0; ks < cfg_.tile_k / k_per_mma_; ++ks) {
      Value* db = operand_descriptor(b_op_, stage, 0, ks);
      for (int slab = 0; slab < slabs_; ++slab) {
        Value* da = nullptr;
        if (pingpong_) {
          da = operand_descriptor(a_, stage, slab * 64, ks);
        } else {
          // Each warpgroup's A rows: select among the tile's 64-row slabs.
          for (int g = 0; g < cfg_.tile_m / 64; ++g) {
            Value* d = operand_descriptor(a_, stage, g * 64, ks);
            da = g == 0 ? d : b_.CreateSelect(b_.CreateICmpEQ(wg, i32(g)), d, da);
          }
        }
        std::vector<Value*> args{da, db, i32(1)};
        const auto acc = [&](int i) { return acc_[static_cast<size_t>(slab * regs + i)]; };
        for (int i = 0; i < regs; ++i) args.push_back(b_.CreateLoad(b_.getFloatTy(), acc(i)));
        Value* d = convergent(b_.CreateCall(mma, args));
        for (int i = 0; i < regs; ++i) {
          b_.CreateStore(b_.CreateExtractValue(d, static_cast<unsigned>(i)), acc(i));
        }
      }
    }
    asm_void("wgmma.commit_group.sync.aligned;");
  }

  Value* batch_offset(const Operand& o) {
    Value* off = i64(0);
    for (auto [stride, out] : o.batch) {
      off = b_.CreateAdd(off, b_.CreateMul(batch_coords_[static_cast<size_t>(out)], stride));
    }
    return off;
  }

  // The MMA warps' barrier: the whole block, or with a producer warpgroup that sits out
  // (mma.sync images of a TMA config), barrier 1 of the MMA warps.
  void barrier() {
    if (cfg_.tma) {
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {},
                         {i32(1), i32(cfg_.math_threads())});
    } else {
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
    }
  }

  // Byte offset, within a stage, of chunk `chunk` of row `row` of operand o (i32 values).
  Value* chunk_offset(const Operand& o, Value* row, Value* chunk) {
    if (wgmma_ && !o.info->k_major()) {
      // Blocks of 64 M/N elements, each tile_k rows (reduced indices) of 128 bytes.
      Value* block = b_.CreateLShr(chunk, i32(3));
      Value* phys = b_.CreateXor(b_.CreateAnd(chunk, i32(7)), b_.CreateAnd(row, i32(7)));
      Value* in_block = b_.CreateAdd(b_.CreateMul(row, i32(128)), b_.CreateMul(phys, i32(16)));
      return b_.CreateAdd(i32(o.smem_offset),
                          b_.CreateAdd(b_.CreateMul(block, i32(cfg_.tile_k * 128)), in_block));
    }
    Value* swz = o.chunks >= 8 ? b_.CreateAnd(row, i32(7))
                               : b_.CreateAnd(b_.CreateLShr(row, i32(1)), i32(3));
    Value* phys = b_.CreateXor(chunk, swz);
    return b_.CreateAdd(
        i32(o.smem_offset),
        b_.CreateMul(b_.CreateAdd(b_.CreateMul(row, i32(o.chunks)), phys), i32(kChunkBytes)));
  }

  Value* smem_at(Value* stage, Value* offset) {
    Value* byte = b_.CreateAdd(b_.CreateMul(stage, i32(stage_bytes_)), offset);
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), smem_, {b_.CreateZExt(byte, b_.getInt64Ty())});
  }

  // Step `kt`'s operand tiles into stage `stage`.
  void load_step(Value* stage, Value* kt) {
    Value* k0 = b_.CreateMul(kt, i64(cfg_.tile_k));
    load_operand(a_, stage, k0, m0_);
    load_operand(b_op_, stage, k0, n0_);
  }

  // This thread's chunks of operand o: chunk copy_tid_ + i * copy_threads_ for each i.
  void load_operand(const Operand& o, Value* stage, Value* k0, Value* mn0) {
    const int per_thread = o.rows * o.chunks / copy_threads_;
    if (specialized_) {
      // The producer warpgroup has few registers: one chunk at a time.
      loop(i64(0), i64(per_thread), i64(1), "chunk", [&](Value* i) {
        Value* q = b_.CreateMul(b_.CreateTrunc(i, b_.getInt32Ty()), i32(copy_threads_));
        copy_chunks(o, stage, k0, mn0, {b_.CreateAdd(copy_tid_, q)});
      });
      return;
    }
    std::vector<Value*> qs;
    for (int i = 0; i < per_thread; ++i)
      qs.push_back(b_.CreateAdd(copy_tid_, i32(i * copy_threads_)));
    copy_chunks(o, stage, k0, mn0, qs);
  }

  // Copies chunks `qs` (row-major over the tile's rows of 16-byte chunks) of operand o.
  void copy_chunks(const Operand& o, Value* stage, Value* k0, Value* mn0,
                   const std::vector<Value*>& qs) {
    const int vec = kChunkBytes / elem_bytes_;
    Value* batch = &o == &a_ ? a_batch_ : b_batch_;
    // The chunk's row and column, its first element's coordinates, and its offset.
    struct Chunk {
      Value *row, *col, *mn, *k, *smem;
    };
    std::vector<Chunk> chunks;
    for (Value* q : qs) {
      Chunk ch;
      ch.row = b_.CreateUDiv(q, i32(o.chunks));
      ch.col = b_.CreateURem(q, i32(o.chunks));
      Value* row64 = b_.CreateZExt(ch.row, b_.getInt64Ty());
      Value* col64 = b_.CreateMul(b_.CreateZExt(ch.col, b_.getInt64Ty()), i64(vec));
      if (o.info->k_major()) {
        ch.mn = b_.CreateAdd(mn0, row64);
        ch.k = b_.CreateAdd(k0, col64);
      } else {
        ch.k = b_.CreateAdd(k0, row64);
        ch.mn = b_.CreateAdd(mn0, col64);
      }
      ch.smem = smem_at(stage, chunk_offset(o, ch.row, ch.col));
      chunks.push_back(ch);
    }
    auto offset = [&](Value* mn, Value* k) {
      return b_.CreateAdd(batch,
                          b_.CreateAdd(b_.CreateMul(mn, o.stride_mn), b_.CreateMul(k, o.stride_k)));
    };
    if_else(
        o.vector_ok,
        [&] {
          for (const Chunk& ch : chunks) {
            Value* in = b_.CreateAnd(b_.CreateICmpULT(ch.mn, o.extent_mn),
                                     b_.CreateICmpULT(ch.k, k_extent_));
            Value* src =
                em_.element_ptr(o.base, dtype_, b_.CreateSelect(in, offset(ch.mn, ch.k), i64(0)));
            b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s, {},
                               {ch.smem, src, b_.CreateSelect(in, i32(kChunkBytes), i32(0))});
          }
        },
        [&] {
          // Element by element: misaligned pointers, or rows that are not whole chunks.
          for (const Chunk& ch : chunks) {
            // Elements of the chunk inside the tensor: along its contiguous index, up to 8.
            Value* along = o.info->k_major() ? ch.k : ch.mn;
            Value* extent = o.info->k_major() ? k_extent_ : o.extent_mn;
            Value* other_in = o.info->k_major() ? b_.CreateICmpULT(ch.mn, o.extent_mn)
                                                : b_.CreateICmpULT(ch.k, k_extent_);
            Value* left = b_.CreateSelect(b_.CreateICmpULT(along, extent),
                                          b_.CreateSub(extent, along), i64(0));
            Value* count = b_.CreateSelect(
                other_in, b_.CreateSelect(b_.CreateICmpULT(left, i64(vec)), left, i64(vec)),
                i64(0));
            Value* off =
                b_.CreateSelect(b_.CreateICmpEQ(count, i64(0)), i64(0), offset(ch.mn, ch.k));
            if (wgmma_) {
              copy_elements(b_, o.base, off, count, ch.smem);
            } else {
              b_.CreateCall(scalar_copy(), {o.base, off, count, ch.smem});
            }
          }
        });
  }

  // A function (kept out of line, so that the values it computes are not hoisted into the
  // kernel's loops and held in registers there) that copies `count` <= 8 elements from
  // base + off to a 16-byte chunk of shared memory, zeros after them. Not for wgmma images:
  // ptxas, compiling through nvJitLink, then serializes every wgmma ("Extern calls", C7509)
  // and ignores setmaxnreg (C7504); they copy inline (copy_elements).
  llvm::Function* scalar_copy() {
    if (scalar_copy_) return scalar_copy_;
    auto* fty = llvm::FunctionType::get(
        b_.getVoidTy(), {b_.getPtrTy(1), b_.getInt64Ty(), b_.getInt64Ty(), b_.getPtrTy(3)}, false);
    scalar_copy_ = llvm::Function::Create(fty, llvm::Function::InternalLinkage,
                                          fn_->getName() + "_copy_elements", &m_);
    scalar_copy_->addFnAttr(llvm::Attribute::NoInline);
    llvm::IRBuilder<> fb(BasicBlock::Create(m_.getContext(), "entry", scalar_copy_));
    copy_elements(fb, scalar_copy_->getArg(0), scalar_copy_->getArg(1), scalar_copy_->getArg(2),
                  scalar_copy_->getArg(3));
    fb.CreateRetVoid();
    return scalar_copy_;
  }

  // Emits, at fb's insertion point, the copy of `count` <= 8 elements (4 of f32) from base + off
  // to the 16-byte chunk `dst`, zeros after them.
  void copy_elements(llvm::IRBuilder<>& fb, Value* base, Value* off, Value* count, Value* dst) {
    llvm::LLVMContext& ctx = m_.getContext();
    llvm::Function* fn = fb.GetInsertBlock()->getParent();
    const int vec = kChunkBytes / elem_bytes_;
    llvm::Type* et = fb.getIntNTy(static_cast<unsigned>(8 * elem_bytes_));
    Value* packed = llvm::Constant::getNullValue(llvm::FixedVectorType::get(et, vec));
    for (int e = 0; e < vec; ++e) {
      BasicBlock* from = fb.GetInsertBlock();
      BasicBlock* yes = BasicBlock::Create(ctx, "load", fn);
      BasicBlock* done = BasicBlock::Create(ctx, "next", fn);
      fb.CreateCondBr(fb.CreateICmpSLT(fb.getInt64(e), count), yes, done);
      fb.SetInsertPoint(yes);
      Value* p = fb.CreateInBoundsGEP(et, base, fb.CreateAdd(off, fb.getInt64(e)));
      Value* with = fb.CreateInsertElement(
          packed, fb.CreateAlignedLoad(et, p, llvm::Align(static_cast<uint64_t>(elem_bytes_))), e);
      fb.CreateBr(done);
      fb.SetInsertPoint(done);
      llvm::PHINode* phi = fb.CreatePHI(packed->getType(), 2);
      phi->addIncoming(packed, from);
      phi->addIncoming(with, yes);
      packed = phi;
    }
    fb.CreateAlignedStore(packed, dst, llvm::Align(kChunkBytes));
  }

  // ---- math --------------------------------------------------------------------------------

  // Four 8 x 8 matrices of operand o for one ldmatrix.x4: matrix q has its M/N rows at
  // mn_base + mn_off(q) and its reduced columns at k_base + k_off(q). A matrix's rows are 16
  // bytes: 8 reduced indices of f16 or bf16, 4 of tf32, whose lane (g, t) gets word t of row g,
  // as mma.sync m16n8k8.tf32 takes its fragments (tf32 operands are K-major: no transposes).
  std::array<Value*, 4> ldmatrix(const Operand& o, Value* stage, Value* mn_base, Value* k_base,
                                 bool a_order) {
    Value* q = b_.CreateLShr(lane_, i32(3));
    Value* r = b_.CreateAnd(lane_, i32(7));
    // A: q = (k half) * 2 + (m half); B: q = (n half) * 2 + (k half).
    Value* lo = b_.CreateAnd(q, i32(1));
    Value* hi = b_.CreateLShr(q, i32(1));
    Value* mn_off = b_.CreateMul(a_order ? lo : hi, i32(8));
    Value* k_off = b_.CreateMul(a_order ? hi : lo, i32(k_per_chunk_));
    Value *row, *chunk;
    if (o.info->k_major()) {
      row = b_.CreateAdd(b_.CreateAdd(mn_base, mn_off), r);
      chunk = b_.CreateUDiv(b_.CreateAdd(k_base, k_off), i32(k_per_chunk_));
    } else {
      row = b_.CreateAdd(b_.CreateAdd(k_base, k_off), r);
      chunk = b_.CreateUDiv(b_.CreateAdd(mn_base, mn_off), i32(8));
    }
    Value* ptr = smem_at(stage, chunk_offset(o, row, chunk));
    const auto id = o.info->k_major()
                        ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16
                        : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16;
    Value* regs = b_.CreateIntrinsic(id, {ptr->getType()}, {ptr});
    return {b_.CreateExtractValue(regs, 0), b_.CreateExtractValue(regs, 1),
            b_.CreateExtractValue(regs, 2), b_.CreateExtractValue(regs, 3)};
  }

  // ---- f32 on CUDA cores (ContractionShape::fma) ----------------------------------------------
  //
  // Each thread computes the accumulators an mma.sync m16n8 fragment would hold (c0 at row g,
  // column 2t; c1 at (g, 2t + 1); c2 at (g + 8, 2t); c3 at (g + 8, 2t + 1), g = lane / 4,
  // t = lane % 4), so that the epilogue and split-K's records are the tensor-core path's, with
  // one FMA per product from the stage's tiles. The warp's rows are w0 + c + l: w0 its first
  // M (or N) index (a multiple of 32), c a constant multiple of 8, l = g (A) or 2t + h (B) < 8,
  // so that the swizzle of a K-major row (chunk_offset) depends on l alone and an element's
  // address is a register per (operand, l, chunk) plus a constant.

  // The byte offset (i32, within a stage) of element (w0 + c + l, k) of operand o, as a
  // register memoized in `regs` under (form, key) and a constant.
  Value* fma_offset(const Operand& o, Value* w0, int c, Value* l, int form, int k,
                    std::map<std::tuple<const Operand*, int, int>, Value*>& regs) {
    const int row_bytes = o.chunks * kChunkBytes;
    auto reg = [&](int key, const std::function<Value*()>& make) {
      Value*& r = regs[{&o, form, key}];
      if (r == nullptr) r = make();
      return r;
    };
    if (o.info->k_major()) {
      // Row w0 + c + l, chunk k / 4 swizzled by the row's low bits (those of l), word k % 4.
      const int kc = k / k_per_chunk_;
      Value* r = reg(kc, [&] {
        Value* swz = o.chunks >= 8 ? b_.CreateAnd(l, i32(7))
                                   : b_.CreateAnd(b_.CreateLShr(l, i32(1)), i32(3));
        Value* row = b_.CreateAdd(w0, l);
        return b_.CreateAdd(
            i32(o.smem_offset),
            b_.CreateAdd(b_.CreateMul(row, i32(row_bytes)),
                         b_.CreateMul(b_.CreateXor(i32(kc), swz), i32(kChunkBytes))));
      });
      return b_.CreateAdd(r, i32(c * row_bytes + (k % k_per_chunk_) * elem_bytes_));
    }
    // Row k, whose swizzle S is a constant; chunk (w0 + c + l) / 4: w0 / 4 (a multiple of 8)
    // plus c / 4 (even, its bits above the first flipped by S) plus l / 4 (bit 0, flipped by
    // S's), word l % 4.
    const int s = o.chunks >= 8 ? k & 7 : (k >> 1) & 3;
    Value* r = reg(s & 1, [&] {
      Value* q = b_.CreateXor(b_.CreateLShr(l, i32(2)), i32(s & 1));
      Value* lane = b_.CreateAdd(b_.CreateMul(q, i32(kChunkBytes)),
                                 b_.CreateMul(b_.CreateAnd(l, i32(3)), i32(elem_bytes_)));
      return b_.CreateAdd(i32(o.smem_offset),
                          b_.CreateAdd(b_.CreateMul(w0, i32(elem_bytes_)), lane));
    });
    return b_.CreateAdd(r, i32(k * row_bytes + ((c / 4) ^ (s & ~1)) * kChunkBytes));
  }

  // A stage in chunks of 4 reduced indices: the A fragment first (rows g and g + 8 of each 16 of
  // the warp's rows, 4 values each: one 16-byte load a row where A is K-major, else one load a
  // value), then for each 8 of the warp's columns the B fragment (columns 2t and 2t + 1, 4
  // values each: a 16-byte load a column where B is K-major, else an 8-byte load of the pair
  // for each reduced index) and its FMAs, so that few operand values are live beside the
  // accumulators. Measured on an H200 at 4096^3 (bench/results/2026-11-30-h200-tf32, calls 4
  // to 6): 128 x 128 tiles 4.30 ms with a load per value, 4.07 with these; 128 x 256 tiles
  // 3.62-3.86 ms either way (cuBLAS's f32 GEMM 2.70). Those run 255 registers a thread, one
  // block of 8 warps per SM: two warps a scheduler, 2.83 cycles between a warp's instructions,
  // 68% of issue slots busy, the FMA pipe 59% (Nsight Compute): latency, not the loads, bounds
  // them.
  void fma_math(Value* stage) {
    const int wm = cfg_.tile_m / cfg_.warps_m, wn = cfg_.tile_n / cfg_.warps_n;
    const int mt_count = wm / 16, nt_count = wn / 8;
    Value* g = b_.CreateLShr(lane_, i32(2));
    Value* t2 = b_.CreateMul(b_.CreateAnd(lane_, i32(3)), i32(2));
    Value* m_warp = b_.CreateMul(warp_m_, i32(wm));
    Value* n_warp = b_.CreateMul(warp_n_, i32(wn));
    const std::array<Value*, 2> b_lanes{t2, b_.CreateAdd(t2, i32(1))};
    std::map<std::tuple<const Operand*, int, int>, Value*> regs;
    // `n` consecutive f32 from element (w0 + c + l, k) on: along K (K-major) or M/N.
    auto load = [&](const Operand& o, Value* w0, int c, Value* l, int form, int k, int n) {
      Value* ptr = smem_at(stage, fma_offset(o, w0, c, l, form, k, regs));
      llvm::Type* ty =
          n == 1 ? b_.getFloatTy()
                 : static_cast<llvm::Type*>(llvm::FixedVectorType::get(b_.getFloatTy(), n));
      Value* v = b_.CreateAlignedLoad(ty, ptr, llvm::Align(static_cast<uint64_t>(4 * n)));
      std::vector<Value*> out;
      for (int i = 0; i < n; ++i) {
        out.push_back(n == 1 ? v : b_.CreateExtractElement(v, static_cast<uint64_t>(i)));
      }
      return out;
    };
    const int kChunk = k_per_chunk_;  // reduced indices per 16 bytes: 4 of f32
    for (int k0 = 0; k0 < cfg_.tile_k; k0 += kChunk) {
      // a[r][w]: row r = 2 mt + h, reduced index k0 + w.
      std::vector<std::vector<Value*>> a(static_cast<size_t>(2 * mt_count));
      for (int mt = 0; mt < mt_count; ++mt) {
        for (int h = 0; h < 2; ++h) {
          std::vector<Value*>& row = a[static_cast<size_t>(2 * mt + h)];
          if (a_.info->k_major()) {
            row = load(a_, m_warp, 16 * mt + 8 * h, g, 0, k0, kChunk);
          } else {
            for (int w = 0; w < kChunk; ++w) {
              row.push_back(load(a_, m_warp, 16 * mt + 8 * h, g, 0, k0 + w, 1)[0]);
            }
          }
        }
      }
      for (int nt = 0; nt < nt_count; ++nt) {
        // b[h][w]: column 2t + h.
        std::array<std::vector<Value*>, 2> b;
        if (b_op_.info->k_major()) {
          for (int h = 0; h < 2; ++h) b[h] = load(b_op_, n_warp, 8 * nt, b_lanes[h], h, k0, kChunk);
        } else {
          for (int w = 0; w < kChunk; ++w) {
            std::vector<Value*> pair = load(b_op_, n_warp, 8 * nt, t2, 0, k0 + w, 2);
            b[0].push_back(pair[0]);
            b[1].push_back(pair[1]);
          }
        }
        for (int w = 0; w < kChunk; ++w) {
          for (int mt = 0; mt < mt_count; ++mt) {
            for (int i = 0; i < 4; ++i) {
              llvm::AllocaInst* acc = acc_[static_cast<size_t>((mt * nt_count + nt) * 4 + i)];
              Value* sum = b_.CreateLoad(b_.getFloatTy(), acc);
              Value* x = a[static_cast<size_t>(2 * mt + i / 2)][static_cast<size_t>(w)];
              Value* y = b[static_cast<size_t>(i % 2)][static_cast<size_t>(w)];
              b_.CreateStore(
                  b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()}, {x, y, sum}), acc);
            }
          }
        }
      }
    }
  }

  void math(Value* stage) {
    if (c_.fma()) {
      fma_math(stage);
      return;
    }
    const int wm = cfg_.tile_m / cfg_.warps_m, wn = cfg_.tile_n / cfg_.warps_n;
    const int mt_count = wm / 16, nt_count = wn / 8;
    Value* m_warp = b_.CreateMul(warp_m_, i32(wm));
    Value* n_warp = b_.CreateMul(warp_n_, i32(wn));
    for (int ks = 0; ks < cfg_.tile_k / k_per_mma_; ++ks) {
      std::vector<std::array<Value*, 4>> af;
      std::vector<std::array<Value*, 2>> bf;
      Value* k_base = i32(ks * k_per_mma_);
      for (int mt = 0; mt < mt_count; ++mt) {
        af.push_back(ldmatrix(a_, stage, b_.CreateAdd(m_warp, i32(mt * 16)), k_base, true));
      }
      for (int p = 0; p < nt_count / 2; ++p) {
        auto x = ldmatrix(b_op_, stage, b_.CreateAdd(n_warp, i32(p * 16)), k_base, false);
        bf.push_back({x[0], x[1]});
        bf.push_back({x[2], x[3]});
      }
      for (int mt = 0; mt < mt_count; ++mt) {
        for (int nt = 0; nt < nt_count; ++nt) mma(af[mt], bf[nt], mt * nt_count + nt);
      }
    }
  }

  void mma(const std::array<Value*, 4>& a, const std::array<Value*, 2>& bv, int frag) {
    std::vector<Value*> args;
    llvm::Type* half2 = llvm::FixedVectorType::get(b_.getHalfTy(), 2);
    auto operand = [&](Value* v) { return dtype_ == DType::f16 ? b_.CreateBitCast(v, half2) : v; };
    for (Value* v : a) args.push_back(operand(v));
    for (Value* v : bv) args.push_back(operand(v));
    for (int i = 0; i < 4; ++i) {
      args.push_back(b_.CreateLoad(b_.getFloatTy(), acc_[static_cast<size_t>(frag * 4 + i)]));
    }
    const auto id = c_.tf32                ? llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32
                    : dtype_ == DType::f16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32
                                           : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
    Value* d = b_.CreateIntrinsic(id, {}, args);
    for (int i = 0; i < 4; ++i) {
      b_.CreateStore(b_.CreateExtractValue(d, static_cast<unsigned>(i)),
                     acc_[static_cast<size_t>(frag * 4 + i)]);
    }
  }

  // ---- epilogue ----------------------------------------------------------------------------

  // What the kernel stores: each output statement as an expression of the point s0, s1, ...
  // (the space's dimensions), loads of the contraction's result left as leaves.
  struct Store {
    int param;
    Expr value;
  };

  std::vector<Store> stores() {
    Inliner inliner(sk_.def, [&](const Stmt& s) { return s.target != c_.target; });
    std::vector<Store> out;
    for (const Stmt& s : sk_.def.body) {
      const TensorDecl* t = sk_.def.find_tensor(s.target);
      if (t->role != TensorRole::output) continue;
      Rename rename;
      const auto& roles = sk_.roles.at(s.target);
      for (const std::string& v : s.indices) rename[v] = fmt::format("s{}", roles.at(v));
      Expr value = s.target == c_.target
                       ? make_load(c_.target, rename_all(s.indices, rename), t->dtype, s.loc)
                       : inliner.rewrite(s.value, rename);
      out.push_back({param_index(s.target), value});
    }
    return out;
  }

  static std::vector<std::string> rename_all(const std::vector<std::string>& v, const Rename& r) {
    std::vector<std::string> out;
    for (const std::string& x : v) out.push_back(r.at(x));
    return out;
  }

  // The output element's coordinates (i64) by dimension.
  Value* coord_of(const std::string& var, const std::vector<Value*>& point) {
    internal_check(var.size() > 1 && var[0] == 's', "contraction: an epilogue index is not s<d>");
    return point[static_cast<size_t>(std::stoi(var.substr(1)))];
  }

  // Offset (elements) in parameter `p` of the element at indices `idx` (s<d> names) of `point`.
  Value* offset_in(int p, const std::vector<std::string>& idx, const std::vector<Value*>& point) {
    const std::vector<Value*>& st = strides_of(p);
    Value* off = i64(0);
    for (size_t d = 0; d < idx.size(); ++d) {
      off = b_.CreateAdd(off, b_.CreateMul(coord_of(idx[d], point), st[d]));
    }
    return off;
  }

  // What every epilogue evaluates: the stores, the sum's scale, and whether the contraction's
  // own result is an output rounded to 16 bits (then its readers see the rounded value).
  struct EpilogueMath {
    std::vector<Store> outs;
    Expr scale;
    bool rounded = false;
    DType target_dt = DType::f32;
  };

  EpilogueMath epilogue_math() {
    EpilogueMath e;
    e.outs = stores();
    Rename to_point;
    for (size_t d = 0; d < c_.vars.size(); ++d) to_point[c_.vars[d]] = fmt::format("s{}", d);
    if (c_.scale.defined())
      e.scale = Inliner(sk_.def, [](const Stmt&) { return false; }).rewrite(c_.scale, to_point);
    const TensorDecl& target = *sk_.def.find_tensor(c_.target);
    e.target_dt = target.dtype;
    e.rounded = target.role == TensorRole::output &&
                (target.dtype == DType::bf16 || target.dtype == DType::f16);
    return e;
  }
  std::vector<Value*> point_values(const EpilogueMath& e, Value* m, Value* n, Value* sum) {
    return point_values(e.outs, e.scale, e.rounded, e.target_dt, m, n, sum);
  }

  // i1: every output's rows are a multiple of `elems` elements and its pointer is aligned to
  // `elems` of them (then a store of `elems` from a multiple of `elems` is aligned).
  Value* outputs_aligned(const std::vector<Store>& outs, int elems) {
    Value* ok = b_.CreateICmpEQ(b_.CreateURem(n_extent_, i64(elems)), i64(0));
    for (const Store& st : outs) {
      const auto bytes =
          static_cast<int64_t>(elems * size_of(params_[static_cast<size_t>(st.param)]->dtype));
      ok = b_.CreateAnd(ok, pointer_aligned(st.param, bytes));
    }
    return ok;
  }

  // i1: output parameter `param`'s pointer is a multiple of `bytes` (a power of two).
  Value* pointer_aligned(int param, int64_t bytes) {
    Value* addr = b_.CreatePtrToInt(fn_->getArg(static_cast<unsigned>(param)), b_.getInt64Ty());
    return b_.CreateICmpEQ(b_.CreateAnd(addr, i64(bytes - 1)), i64(0));
  }

  void epilogue() {
    const EpilogueMath em = epilogue_math();
    const std::vector<Store>& outs = em.outs;

    const int wn = cfg_.tile_n / cfg_.warps_n;
    const int nt_count = wn / 8;
    Value* g = b_.CreateZExt(b_.CreateLShr(lane_, i32(2)), b_.getInt64Ty());
    Value* c2 = b_.CreateZExt(b_.CreateMul(b_.CreateAnd(lane_, i32(3)), i32(2)), b_.getInt64Ty());
    Value* m_warp = b_.CreateAdd(m0_, b_.CreateZExt(warp_row0_, b_.getInt64Ty()));
    Value* n_warp =
        b_.CreateAdd(n0_, b_.CreateZExt(b_.CreateMul(warp_n_, i32(wn)), b_.getInt64Ty()));
    // A thread holds pairs of adjacent columns (n even): one store of both elements of each
    // output when the rows are an even number of elements and every output's pointer is
    // aligned to two of them (checked once; then n even means the pair is aligned).
    // (Emitting the pair's stores as a function called 64 times instead, to shrink the code
    // of long epilogues, was measured 3.5x slower on an H200 for the bias + erf-GELU GEMM:
    // the caller saves the accumulators still live around each call.)
    Value* pairs_ok = outputs_aligned(outs, 2);
    auto checked = [&] {
      for (int mt = 0; mt < slabs_; ++mt) {
        for (int nt = 0; nt < nt_count; ++nt) {
          for (int half = 0; half < 2; ++half) {
            const size_t first = static_cast<size_t>((mt * nt_count + nt) * 4 + half * 2);
            Value* m = b_.CreateAdd(m_warp, b_.CreateAdd(g, i64(mt * slab_rows_ + half * 8)));
            Value* n = b_.CreateAdd(n_warp, b_.CreateAdd(c2, i64(nt * 8)));
            Value* n1 = b_.CreateAdd(n, i64(1));
            Value* sums[2] = {b_.CreateLoad(b_.getFloatTy(), acc_[first]),
                              b_.CreateLoad(b_.getFloatTy(), acc_[first + 1])};
            Value* row_in = b_.CreateICmpULT(m, m_extent_);
            auto store_one = [&](Value* col, Value* sum) {
              if_then(b_.CreateAnd(row_in, b_.CreateICmpULT(col, n_extent_)),
                      [&] { store(outs, m, col, {point_values(em, m, col, sum)}); });
            };
            if_else(
                b_.CreateAnd(pairs_ok, b_.CreateAnd(row_in, b_.CreateICmpULT(n1, n_extent_))),
                [&] {
                  store(outs, m, n,
                        {point_values(em, m, n, sums[0]), point_values(em, m, n1, sums[1])});
                },
                [&] {
                  store_one(n, sums[0]);
                  store_one(n1, sums[1]);
                });
          }
        }
      }
    };
    if (vector_epilogue(outs)) {
      if_else(
          interior(outs), [&] { vector_stores(em, m_warp, n_warp, g, c2); }, checked);
    } else {
      checked();
    }
  }

  // Whether the register epilogue also has the interior tiles' form (vector_stores): every
  // output 2 or 4 bytes an element, a warp's columns whole groups of 4 fragments, and an
  // epilogue cheap enough to appear twice (a transcendental one, unrolled over every
  // accumulator, already waits on instruction fetch: bench/results/2026-11-25-h200-epilogue;
  // approximated tanh and erf count, their code twice over not measured).
  bool vector_epilogue(const std::vector<Store>& outs) const {
    if ((cfg_.tile_n / cfg_.warps_n / 8) % 4 != 0 || transcendental_epilogue(sk_.def, false)) {
      return false;
    }
    return std::all_of(outs.begin(), outs.end(), [&](const Store& st) {
      const int bytes = size_of(params_[static_cast<size_t>(st.param)]->dtype);
      return bytes == 2 || bytes == 4;
    });
  }

  // i1: the placed tile lies wholly inside the output, whose rows are a multiple of 8 elements,
  // and every output's pointer is 16-byte aligned: every 16-byte store of vector_stores is
  // aligned and in bounds.
  Value* interior(const std::vector<Store>& outs) {
    Value* ok = b_.CreateAnd(b_.CreateICmpULE(b_.CreateAdd(m0_, i64(cfg_.tile_m)), m_extent_),
                             b_.CreateICmpULE(b_.CreateAdd(n0_, i64(cfg_.tile_n)), n_extent_));
    ok = b_.CreateAnd(ok, b_.CreateICmpEQ(b_.CreateAnd(n_extent_, i64(7)), i64(0)));
    for (const Store& st : outs) ok = b_.CreateAnd(ok, pointer_aligned(st.param, 16));
    return ok;
  }

  // The register epilogue of an interior tile, in 16-byte stores. A thread's accumulators are
  // pairs of adjacent columns (fragment f: columns 8 f + 2 c and + 1 of quad lane c), so a warp
  // storing them directly writes 4 bytes a lane, 16 of every 32-byte sector of 8 rows (ncu
  // counted half the sectors excess). Here each group of G fragments (G = 4 for 16-bit
  // outputs, 2 for 32-bit: 16 bytes of pairs) is transposed among the G lanes of the quad that
  // differ in their low bits, by log2 G butterfly exchanges: afterwards lane c holds 2 G
  // consecutive elements of one row, from column 8 (f0 + c % G) + 2 G (c / G) of the group's
  // first fragment f0, and stores them at once; a warp's store covers 64 bytes of each of its
  // 8 rows.
  void vector_stores(const EpilogueMath& em, Value* m_warp, Value* n_warp, Value* g, Value* c2) {
    const int nt_count = cfg_.tile_n / cfg_.warps_n / 8;
    Value* quad = b_.CreateAnd(lane_, i32(3));
    for (int mt = 0; mt < slabs_; ++mt) {
      for (int half = 0; half < 2; ++half) {
        Value* m = b_.CreateAdd(m_warp, b_.CreateAdd(g, i64(mt * slab_rows_ + half * 8)));
        for (int f0 = 0; f0 < nt_count; f0 += 4) {
          // values[2 k + e][o]: output o at fragment f0 + k, column + e.
          std::vector<std::vector<Value*>> values;
          for (int k = 0; k < 4; ++k) {
            const size_t first = static_cast<size_t>((mt * nt_count + f0 + k) * 4 + half * 2);
            Value* n = b_.CreateAdd(n_warp, b_.CreateAdd(c2, i64((f0 + k) * 8)));
            for (int e = 0; e < 2; ++e) {
              values.push_back(point_values(em, m, b_.CreateAdd(n, i64(e)),
                                            b_.CreateLoad(b_.getFloatTy(), acc_[first + e])));
            }
          }
          for (size_t o = 0; o < em.outs.size(); ++o) {
            const int param = em.outs[o].param;
            const DType dt = params_[static_cast<size_t>(param)]->dtype;
            const int group = 16 / (2 * size_of(dt));  // fragments a lane stores at once
            std::vector<Value*> vals;
            for (const std::vector<Value*>& v : values) vals.push_back(v[o]);
            const std::vector<Value*> words = em_.storage_words(dt, vals);
            const int per = static_cast<int>(words.size()) / 4;  // words a fragment's pair
            for (int k0 = 0; k0 < 4; k0 += group) {
              // slots[k][w]: word w of fragment k0 + k's pair.
              std::vector<std::vector<Value*>> slots(static_cast<size_t>(group));
              for (int k = 0; k < group; ++k) {
                for (int w = 0; w < per; ++w) {
                  slots[static_cast<size_t>(k)].push_back(
                      words[static_cast<size_t>((k0 + k) * per + w)]);
                }
              }
              for (int bit = 1; bit < group; bit <<= 1) exchange(slots, quad, bit);
              Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getInt32Ty(), 4));
              unsigned at = 0;
              for (const std::vector<Value*>& slot : slots) {
                for (Value* w : slot) vec = b_.CreateInsertElement(vec, w, at++);
              }
              Value* col = b_.CreateAdd(
                  b_.CreateMul(b_.CreateAdd(i32(f0 + k0), b_.CreateAnd(quad, i32(group - 1))),
                               i32(8)),
                  b_.CreateMul(
                      b_.CreateLShr(quad, i32(std::countr_zero(static_cast<unsigned>(group)))),
                      i32(2 * group)));
              Value* n = b_.CreateAdd(n_warp, b_.CreateZExt(col, b_.getInt64Ty()));
              b_.CreateAlignedStore(vec, output_ptr(param, m, n), llvm::Align(16));
            }
          }
        }
      }
    }
  }

  // One butterfly step of vector_stores' transpose: the quad lanes c and c ^ bit exchange the
  // slot whose index differs from their own lane in `bit` (each sends the slot it then
  // overwrites). Afterwards slot k of lane c holds what slot k ^ bit of lane c ^ bit held where
  // k and c differ in `bit`; after every bit below G, slot k of lane c holds slot c % G of lane
  // (c - c % G) + k: a transpose within each group of G lanes.
  void exchange(std::vector<std::vector<Value*>>& slots, Value* quad, int bit) {
    Value* upper = b_.CreateICmpNE(b_.CreateAnd(quad, i32(bit)), i32(0));
    for (size_t lo = 0; lo < slots.size(); ++lo) {
      if (lo & static_cast<size_t>(bit)) continue;
      const size_t hi = lo | static_cast<size_t>(bit);
      for (size_t w = 0; w < slots[lo].size(); ++w) {
        // A lower lane sends its upper slot and receives the partner's lower one there.
        Value* send = b_.CreateSelect(upper, slots[lo][w], slots[hi][w]);
        Value* got = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                                        {i32(-1), send, i32(bit), i32(31)});
        slots[lo][w] = b_.CreateSelect(upper, got, slots[lo][w]);
        slots[hi][w] = b_.CreateSelect(upper, slots[hi][w], got);
      }
    }
  }

  // The first row (i64) of the placed tile that this thread's MMA warpgroup holds (its first
  // slab's); q (i32): the thread's warp in the warpgroup, 0 .. 3.
  Value* warpgroup_row0(Value* q) {
    return b_.CreateAdd(
        m0_, b_.CreateZExt(b_.CreateSub(warp_row0_, b_.CreateMul(q, i32(16))), b_.getInt64Ty()));
  }
  // i1: this thread is its MMA warpgroup's first, the one that issues its TMA stores.
  Value* warpgroup_leader() { return b_.CreateICmpEQ(b_.CreateAnd(tid_, i32(127)), i32(0)); }

  // The barrier of MMA warpgroup `wg` (i32 0 or 1) alone: named barriers 2 and 3 (0 and 1 are
  // the block's), constants: with an id in a register ptxas reserves all 16.
  void warpgroup_barrier(Value* wg) {
    if_else(
        b_.CreateICmpEQ(wg, i32(0)),
        [&] {
          b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {}, {i32(2), i32(128)});
        },
        [&] {
          b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {}, {i32(3), i32(128)});
        });
  }

  // The epilogue through shared memory (cfg_.smem_epilogue, warp-specialized images: MMA
  // warpgroup w holds rows 64 w .. of the tile, or with ping-pong each 64-row slab of its own
  // tile). For each slab and each kEpilogueColumns columns of it (a chunk), every thread writes
  // its accumulators of the chunk to its warpgroup's buffer (the fragment layout: row
  // 16 q + g and + 8 of warp q, columns 8 f + 2 c and + 1), the warpgroup meets at a named
  // barrier, and a loop reads the buffer back four columns a thread (eight threads a row of 32),
  // evaluates the epilogue there and stores whole rows of the output. The chunks are a loop
  // too, a switch picking each one's registers, so the epilogue's code appears once.
  void staged_epilogue() {
    const EpilogueMath em = epilogue_math();
    constexpr int kCols = ContractionConfig::kEpilogueColumns;
    constexpr int kStride = ContractionConfig::kEpilogueStride;
    constexpr int kQuads = kCols / 4;  // threads a row when reading back
    const int regs = cfg_.tile_n / 2;  // a thread's accumulators of a 64-row slab
    const int chunks = cfg_.tile_n / kCols;
    const int total = slabs_ * chunks;
    llvm::LLVMContext& ctx = m_.getContext();
    Value* wg = warp_group_;
    Value* t = b_.CreateAnd(tid_, i32(127));
    Value* q = b_.CreateAnd(b_.CreateLShr(tid_, i32(5)), i32(3));
    Value* buf = b_.CreateAdd(i32(static_cast<int>(cfg_.epilogue_offset(elem_bytes_))),
                              b_.CreateMul(wg, i32(ContractionConfig::kEpilogueBytes)));
    auto at = [&](Value* index) {  // float `index` (i32) of the warpgroup's buffer
      Value* byte = b_.CreateAdd(buf, b_.CreateMul(index, i32(4)));
      return b_.CreateInBoundsGEP(b_.getInt8Ty(), smem_, {b_.CreateZExt(byte, b_.getInt64Ty())});
    };
    Value* g = b_.CreateLShr(lane_, i32(2));
    Value* c2 = b_.CreateMul(b_.CreateAnd(lane_, i32(3)), i32(2));
    Value* written =
        b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(q, i32(16)), g), i32(kStride)), c2);
    Value* rows0 = warpgroup_row0(q);
    Value* quads_ok = outputs_aligned(em.outs, 4);
    llvm::Type* pair_ty = llvm::FixedVectorType::get(b_.getFloatTy(), 2);
    llvm::Type* quad_ty = llvm::FixedVectorType::get(b_.getFloatTy(), 4);
    loop(i64(0), i64(total), i64(1), "epi.chunk", [&](Value* ci) {
      BasicBlock* join = BasicBlock::Create(ctx, "epi.written", fn_);
      llvm::SwitchInst* sw =
          b_.CreateSwitch(b_.CreateTrunc(ci, b_.getInt32Ty()), join, static_cast<unsigned>(total));
      for (int k = 0; k < total; ++k) {
        BasicBlock* write = BasicBlock::Create(ctx, "epi.write", fn_);
        sw->addCase(b_.getInt32(static_cast<uint32_t>(k)), write);
        b_.SetInsertPoint(write);
        const int slab = k / chunks, c = k % chunks;
        for (int f = 0; f < kCols / 8; ++f) {
          for (int h = 0; h < 2; ++h) {
            const auto first = static_cast<size_t>(slab * regs + (c * kCols / 8 + f) * 4 + h * 2);
            Value* pair = llvm::PoisonValue::get(pair_ty);
            for (unsigned e = 0; e < 2; ++e) {
              pair =
                  b_.CreateInsertElement(pair, b_.CreateLoad(b_.getFloatTy(), acc_[first + e]), e);
            }
            b_.CreateAlignedStore(pair, at(b_.CreateAdd(written, i32(8 * h * kStride + 8 * f))),
                                  llvm::Align(8));
          }
        }
        b_.CreateBr(join);
      }
      b_.SetInsertPoint(join);
      warpgroup_barrier(wg);
      Value* slab = b_.CreateUDiv(ci, i64(chunks));
      Value* rows = b_.CreateAdd(rows0, b_.CreateMul(slab, i64(slab_rows_)));
      Value* cols = b_.CreateAdd(n0_, b_.CreateMul(b_.CreateURem(ci, i64(chunks)), i64(kCols)));
      loop(i64(0), i64(64 * kQuads / 128), i64(1), "epi.rows", [&](Value* it) {
        Value* flat = b_.CreateAdd(b_.CreateMul(b_.CreateTrunc(it, b_.getInt32Ty()), i32(128)), t);
        Value* row = b_.CreateUDiv(flat, i32(kQuads));
        Value* col = b_.CreateMul(b_.CreateURem(flat, i32(kQuads)), i32(4));
        Value* sums = b_.CreateAlignedLoad(
            quad_ty, at(b_.CreateAdd(b_.CreateMul(row, i32(kStride)), col)), llvm::Align(16));
        Value* m = b_.CreateAdd(rows, b_.CreateZExt(row, b_.getInt64Ty()));
        Value* n = b_.CreateAdd(cols, b_.CreateZExt(col, b_.getInt64Ty()));
        Value* row_in = b_.CreateICmpULT(m, m_extent_);
        auto sum = [&](int e) { return b_.CreateExtractElement(sums, static_cast<uint64_t>(e)); };
        if_else(
            b_.CreateAnd(quads_ok, b_.CreateAnd(row_in, b_.CreateICmpULT(b_.CreateAdd(n, i64(3)),
                                                                         n_extent_))),
            [&] {
              std::vector<std::vector<Value*>> values;
              for (int e = 0; e < 4; ++e) {
                values.push_back(point_values(em, m, b_.CreateAdd(n, i64(e)), sum(e)));
              }
              store(em.outs, m, n, values);
            },
            [&] {
              for (int e = 0; e < 4; ++e) {
                Value* ne = b_.CreateAdd(n, i64(e));
                if_then(b_.CreateAnd(row_in, b_.CreateICmpULT(ne, n_extent_)),
                        [&] { store(em.outs, m, ne, {point_values(em, m, ne, sum(e))}); });
              }
            });
      });
      // Every thread has read the chunk before the next one is written.
      warpgroup_barrier(wg);
    });
  }

  // The epilogue through TMA tensor stores (cfg_.tma_store, config.h): MMA warpgroup w holds
  // rows 64 w .. of the tile; for each chunk of 128 bytes of columns (one box of the output's
  // map), every thread writes its values there (rows 16 q + g and + 8 of warp q, the column
  // pair 8 f + 2 c of quad lane c) into one of the warpgroup's two buffers in the 128-byte
  // swizzle (16-byte unit u of row r at u ^ (r % 8): the 8 rows of a warp's write fall in
  // distinct banks), fences them for the async proxy, and at the warpgroup's barrier its first
  // thread stores the buffer with one TMA store. Before that barrier the same thread waits until
  // its earlier stores have read their buffers, so the other buffer is free for the next
  // chunk; chunk i of the block's tiles (counted from its first) writes buffer i % 2. Elements
  // outside the output are computed at the nearest element inside it (their inputs' loads stay
  // in bounds) and clipped by TMA. `j`: the warpgroup's tile ordinal (consume).
  void tma_store_epilogue(Value* j) {
    const EpilogueMath em = epilogue_math();
    internal_check(em.outs.size() == 1 && em.outs[0].param == store_param_,
                   "contraction: a TMA store epilogue stores one output");
    const DType dt = params_[static_cast<size_t>(store_param_)]->dtype;
    const int bytes = size_of(dt);
    const int cols = static_cast<int>(bundle::kTensorMapSwizzleBytes) / bytes;  // a chunk's
    const int chunks = cfg_.tile_n / cols;
    const int frags = cols / 8;  // a thread's fragments of a chunk, each half
    constexpr int64_t kBuffer = ContractionConfig::kStoreBufferBytes;
    Value* wg = warp_group_;
    Value* issuer = warpgroup_leader();
    Value* q = b_.CreateAnd(b_.CreateLShr(tid_, i32(5)), i32(3));
    Value* g = b_.CreateLShr(lane_, i32(2));
    Value* c = b_.CreateAnd(lane_, i32(3));
    // The thread's first row of its warpgroup's 64 (r % 8 = g).
    Value* rows0 = warpgroup_row0(q);
    Value* r0 = b_.CreateAdd(b_.CreateMul(q, i32(16)), g);
    // The buffers' address through an opaque move, so that the writes' addresses are computed
    // here for each tile: loop-invariant, LLVM hoisted all 32 of them out of the tile loop and
    // held them in registers beside the accumulators (ptxas then spilled).
    Value* buffers =
        opaque(b_.CreateAdd(b_.CreatePtrToInt(smem_, b_.getInt32Ty()),
                            b_.CreateAdd(i32(static_cast<int>(cfg_.epilogue_offset(elem_bytes_))),
                                         b_.CreateMul(wg, i32(static_cast<int>(2 * kBuffer))))));
    // A write's 16-byte unit: that of byte (8 f + 2 c) x bytes of its row, whose part
    // (2 c x bytes) / 16 and offset 2 c x bytes % 16 are the lane's and f x bytes / 2 is a
    // multiple of 2 that part never reaches, so unit = (f x bytes / 2) ^ x with x = part ^ g.
    Value* lane_bytes = b_.CreateMul(c, i32(2 * bytes));
    Value* x16 = b_.CreateShl(b_.CreateXor(b_.CreateLShr(lane_bytes, i32(4)), g), i32(4));
    Value* row_at = b_.CreateAdd(b_.CreateMul(r0, i32(128)), b_.CreateAnd(lane_bytes, i32(15)));
    Value* parity0 =
        b_.CreateTrunc(b_.CreateAnd(b_.CreateMul(j, i64(chunks)), i64(1)), b_.getInt32Ty());
    Value* m_last = b_.CreateSub(m_extent_, i64(1));
    Value* n_last = b_.CreateSub(n_extent_, i64(1));
    auto clamp = [&](Value* v, Value* last) {
      return b_.CreateSelect(b_.CreateICmpULT(v, last), v, last);
    };
    Value* map = tensor_map(static_cast<int>(kOperands));
    const int rank = static_cast<int>(sk_.space.size());
    std::vector<std::string> coords;
    for (int d = 0; d < rank; ++d) coords.push_back(fmt::format("${}", 2 + d));
    const std::string store_text = fmt::format(
        "cp.async.bulk.tensor.{}d.global.shared::cta.bulk_group [$0, {{{}}}], [$1];\n"
        "cp.async.bulk.commit_group;",
        rank, fmt::join(coords, ", "));
    std::string store_cons = "l,r";
    for (int d = 0; d < rank; ++d) store_cons += ",r";
    llvm::Type* word_vec = llvm::FixedVectorType::get(b_.getInt32Ty(), bytes / 2);
    // Chunk k's values (words[k][2 f + h]) are computed before chunk k - 1's barrier: the
    // loads of the epilogue's inputs (a column's scale, a bias) then wait beside that barrier,
    // not after it (a scaled GEMM of 4096 x 4096 x 1024 took 5% longer than from registers
    // with each chunk's computed after the barrier before; 2.5% with every chunk's computed
    // first, which delayed the first store: a batch of 16 2048 x 2048 x 512 4% slower).
    std::vector<std::vector<Value*>> words(static_cast<size_t>(chunks));
    auto compute = [&](int k) {
      for (int f = 0; f < frags; ++f) {
        for (int h = 0; h < 2; ++h) {
          const auto first = static_cast<size_t>(((k * frags + f) * 4) + h * 2);
          Value* r = b_.CreateAdd(r0, i32(8 * h));
          Value* m = clamp(b_.CreateAdd(rows0, b_.CreateZExt(r, b_.getInt64Ty())), m_last);
          Value* n = b_.CreateAdd(
              n0_, b_.CreateZExt(b_.CreateAdd(i32(k * cols + 8 * f), b_.CreateMul(c, i32(2))),
                                 b_.getInt64Ty()));
          std::vector<Value*> vals;
          for (int e = 0; e < 2; ++e) {
            Value* ne = clamp(b_.CreateAdd(n, i64(e)), n_last);
            vals.push_back(
                point_values(em, m, ne, b_.CreateLoad(b_.getFloatTy(), acc_[first + e]))[0]);
          }
          Value* vec = llvm::PoisonValue::get(word_vec);
          unsigned at = 0;
          for (Value* w : em_.storage_words(dt, vals)) vec = b_.CreateInsertElement(vec, w, at++);
          words[static_cast<size_t>(k)].push_back(vec);
        }
      }
    };
    compute(0);
    for (int k = 0; k < chunks; ++k) {
      Value* buf = b_.CreateAdd(
          buffers, b_.CreateMul(b_.CreateXor(parity0, i32(k & 1)), i32(static_cast<int>(kBuffer))));
      for (int f = 0; f < frags; ++f) {
        for (int h = 0; h < 2; ++h) {
          Value* at = b_.CreateAdd(
              b_.CreateAdd(buf, row_at),
              b_.CreateAdd(b_.CreateXor(x16, i32(f * bytes / 2 * 16)), i32(h * 8 * 128)));
          b_.CreateAlignedStore(words[static_cast<size_t>(k)][static_cast<size_t>(2 * f + h)],
                                b_.CreateIntToPtr(at, b_.getPtrTy(3)), llvm::Align(2 * bytes));
        }
      }
      if (k + 1 < chunks) compute(k + 1);
      // The writes, visible to the TMA store (the async proxy); the buffers of earlier stores
      // read; then the warpgroup's writes complete and this chunk's store issued.
      asm_void("fence.proxy.async.shared::cta;");
      if_then(issuer, [&] { asm_void("cp.async.bulk.wait_group.read 0;"); });
      warpgroup_barrier(wg);
      if_then(issuer, [&] {
        std::vector<Value*> args{map, buf};
        // Coordinates, innermost first: the chunk's first column, the warpgroup's first row,
        // then the batch.
        args.push_back(b_.CreateTrunc(b_.CreateAdd(n0_, i64(k * cols)), b_.getInt32Ty()));
        args.push_back(b_.CreateTrunc(rows0, b_.getInt32Ty()));
        for (int d = rank - 3; d >= 0; --d) {
          args.push_back(b_.CreateTrunc(batch_coords_[static_cast<size_t>(d)], b_.getInt32Ty()));
        }
        asm_call(store_text, store_cons, args);
      });
    }
  }

  // Stores each output's values at (m, n), (m, n + 1), ...: values[e][o] is element e of
  // output o.
  void store(const std::vector<Store>& outs, Value* m, Value* n,
             const std::vector<std::vector<Value*>>& values) {
    for (size_t o = 0; o < outs.size(); ++o) {
      const DType dt = params_[static_cast<size_t>(outs[o].param)]->dtype;
      std::vector<Value*> vals;
      for (const std::vector<Value*>& v : values) vals.push_back(v[o]);
      em_.store(output_ptr(outs[o].param, m, n), dt, vals);
    }
  }

  // Element (m, n) of the placed tile's batch in output parameter `param`.
  Value* output_ptr(int param, Value* m, Value* n) {
    std::vector<Value*> point = batch_coords_;
    point.push_back(m);
    point.push_back(n);
    std::vector<std::string> all;  // an output is indexed by every dimension, in order
    for (size_t d = 0; d < point.size(); ++d) all.push_back(fmt::format("s{}", d));
    return em_.element_ptr(fn_->getArg(static_cast<unsigned>(param)),
                           params_[static_cast<size_t>(param)]->dtype,
                           offset_in(param, all, point));
  }

  // Each output's value at output element (m, n) whose sum is `sum`.
  std::vector<Value*> point_values(const std::vector<Store>& outs, const Expr& scale, bool rounded,
                                   DType target_dt, Value* m, Value* n, Value* sum) {
    std::vector<Value*> point = batch_coords_;
    point.push_back(m);
    point.push_back(n);
    ValueMemo memo;
    Value* result = nullptr;
    LeafFn leaf = [&](const Expr& e) -> Value* {
      if (const Load* l = e.as<Load>()) {
        if (l->tensor == c_.target) {
          if (!result) {
            result = scale.defined() ? b_.CreateFMul(sum, em_.eval(scale, memo, leaf)) : sum;
            if (rounded) result = em_.widen(em_.to_storage(result, target_dt), target_dt);
          }
          return result;
        }
        const int p = param_index(l->tensor);
        const DType dt = params_[static_cast<size_t>(p)]->dtype;
        return em_.load(em_.element_ptr(fn_->getArg(static_cast<unsigned>(p)), dt,
                                        offset_in(p, l->indices, point)),
                        dt);
      }
      if (const IndexRef* r = e.as<IndexRef>())
        return em_.int_as(coord_of(r->name, point), e.type(), true);
      if (const SymRef* s = e.as<SymRef>())
        return em_.int_as(dim(Dim::symbol(s->name)), e.type(), true);
      internal_check(false, "contraction: an epilogue leaf it cannot evaluate");
      return nullptr;
    };
    std::vector<Value*> values;
    for (const Store& st : outs) values.push_back(em_.eval(st.value, memo, leaf));
    return values;
  }

  const bool wgmma_;
  const bool specialized_;  // a TMA producer warpgroup and MMA warpgroups (run_specialized)
  const bool pingpong_;     // ... each MMA warpgroup on tiles of its own (consume)
  const bool split_;        // split-K (ContractionConfig::split)
  // Blocks of a cluster (1: none): they compute the tiles of cluster_ x tile_m rows at the same
  // columns, and each multicasts its share of B's tile to all of them (run_specialized).
  const int cluster_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  Emitter em_;
  const KernelDef& abi_;
  const ScheduledKernel& sk_;
  const ContractionShape& c_;
  const ContractionConfig cfg_;  // image_config's
  std::vector<const TensorDecl*> params_;
  std::vector<std::string> symbols_;
  DType dtype_;  // f16, bf16, or f32: read as tf32 (c_.tf32) or on CUDA cores (c_.fma())
  int elem_bytes_;
  int k_per_mma_;    // reduced indices per MMA instruction: 32 bytes of them
  int k_per_chunk_;  // reduced indices per 16-byte chunk
  // The output stored through a tensor map (contraction_store_param; -1: none), and whether
  // this image stores it so (the warp-specialized one; the others take the map and ignore it).
  const int store_param_;
  const bool tma_store_;
  // A dependent launch whose wait comes before each epilogue (wait_for_earlier_steps).
  const bool defer_wait_;

  llvm::Function* fn_ = nullptr;
  llvm::Function* scalar_copy_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  std::vector<Value*> batch_dims_, batch_coords_;
  Value *m_extent_ = nullptr, *n_extent_ = nullptr, *k_extent_ = nullptr;
  Value *tiles_m_ = nullptr, *tiles_n_ = nullptr, *per_batch_ = nullptr, *tiles_ = nullptr;
  Value* k_tiles_ = nullptr;
  // The units the walk places (tiles, or with split-K tiles x S) and the placed unit's steps.
  Value *units_ = nullptr, *k_begin_ = nullptr, *k_steps_ = nullptr;
  // Split-K: S (i64), phase 1 (i1), the workspace (global float pointer), the placed record.
  Value *split_s_ = nullptr, *folding_ = nullptr, *workspace_ = nullptr, *record_ = nullptr;
  Value* nblocks_ = nullptr;  // gridDim.x (with a cluster, the clusters)
  Value* rank_ = nullptr;     // i32: with a cluster, the block's rank in it
  Value *tid_ = nullptr, *lane_ = nullptr, *warp_m_ = nullptr, *warp_n_ = nullptr;
  Value* warp_ = nullptr;        // i32: tid / 32, uniform (set_up)
  Value* warp_group_ = nullptr;  // i32: tid / 128, uniform (set_up)
  // A warp's accumulator rows: `slabs_` groups of 16 rows, `slab_rows_` apart, the first at row
  // warp_row0_ (i32) of the tile.
  int slabs_ = 0, slab_rows_ = 0;
  Value* warp_row0_ = nullptr;
  // The threads that copy operand tiles (the MMA warps, or the producer warpgroup without
  // tensor maps) and this thread's index among them.
  Value* copy_tid_ = nullptr;
  int copy_threads_ = 0;
  Value* maps_ok_ = nullptr;   // i1: the runtime encoded the operands' tensor maps
  Value* store_ok_ = nullptr;  // i1: ... and the output's (tma_store_)
  Value* barriers_ = nullptr;  // i32 shared address of the mbarriers: full[stages], empty[stages]
  Value *m0_ = nullptr, *n0_ = nullptr, *a_batch_ = nullptr, *b_batch_ = nullptr;
  Operand a_, b_op_;
  int stage_bytes_ = 0;
  std::vector<llvm::AllocaInst*> acc_;
  std::vector<std::vector<Value*>> strides_;  // by parameter
};

}  // namespace

std::vector<bundle::TensorMapInfo> contraction_tensor_maps(const KernelDef& abi,
                                                           const ScheduledKernel& sk,
                                                           const ContractionConfig& cfg) {
  const ContractionShape& c = *sk.contraction;
  std::vector<bundle::TensorMapInfo> maps;
  if (!cfg.tma) return maps;
  const std::vector<const TensorDecl*> params = abi.params();
  for (const ContractionOperand* o : {&c.a, &c.b}) {
    bundle::TensorMapInfo t;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->name == o->tensor) t.param = static_cast<int>(i);
    }
    // A cluster's blocks each copy 1 / cluster of B's rows (K-major: one box of them).
    const int rows = o->k_major() ? (o == &c.a ? cfg.tile_m : cfg.tile_n / std::max(cfg.cluster, 1))
                                  : cfg.tile_k;
    for (int d = 0; d < o->rank; ++d) {  // innermost first
      const int dim = o->rank - 1 - d;
      const int other = o->k_major() ? o->mn_dim : o->k_dim;
      t.box.push_back(d == 0
                          ? bundle::kTensorMapSwizzleBytes / static_cast<int64_t>(size_of(o->dtype))
                      : dim == other ? rows
                                     : 1);
    }
    maps.push_back(std::move(t));
  }
  const int out = contraction_store_param(abi, sk, cfg);
  if (out >= 0) {
    // 128 bytes of columns of 64 rows (an MMA warpgroup's), one of each batch dimension.
    const TensorDecl& t = *params[static_cast<size_t>(out)];
    bundle::TensorMapInfo store{out, {}, true};
    for (size_t d = 0; d < t.shape.size(); ++d) {
      store.box.push_back(d == 0 ? bundle::kTensorMapSwizzleBytes /
                                       static_cast<int64_t>(size_of(t.dtype))
                          : d == 1 ? 64
                                   : 1);
    }
    maps.push_back(std::move(store));
  }
  return maps;
}

bool contraction_defers_wait(const KernelDef& abi, const ScheduledKernel& sk) {
  internal_check(sk.contraction.has_value(), "contraction_defers_wait: not a contraction");
  auto spec_input = [&](const std::string& tensor) {
    return std::any_of(abi.inputs.begin(), abi.inputs.end(),
                       [&](const TensorDecl& t) { return t.name == tensor; });
  };
  return spec_input(sk.contraction->a.tensor) && spec_input(sk.contraction->b.tensor);
}

int contraction_store_param(const KernelDef& abi, const ScheduledKernel& sk,
                            const ContractionConfig& cfg) {
  if (!cfg.tma_store || !cfg.tma || !cfg.wgmma || cfg.pingpong) return -1;
  const std::vector<const TensorDecl*> params = abi.params();
  int out = -1, outputs = 0;
  for (const Stmt& s : sk.def.body) {
    const TensorDecl* t = sk.def.find_tensor(s.target);
    if (t->role != TensorRole::output) continue;
    ++outputs;
    // Indexed by the space's dimensions in order (as every contraction output is).
    const auto& roles = sk.roles.at(s.target);
    bool in_order = s.indices.size() == sk.space.size();
    for (size_t d = 0; in_order && d < s.indices.size(); ++d) {
      in_order = roles.at(s.indices[d]) == static_cast<int>(d);
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->name == s.target && in_order) out = static_cast<int>(i);
    }
    const DType dt = t->dtype;
    if (!(dt == DType::bf16 || dt == DType::f16 || dt == DType::f32) ||
        t->shape.size() > bundle::kMaxTensorMapRank ||
        cfg.tile_n % (bundle::kTensorMapSwizzleBytes / static_cast<int64_t>(size_of(dt))) != 0) {
      return -1;
    }
  }
  return outputs == 1 ? out : -1;
}

int specialized_register_pool(const ContractionConfig& cfg) {
  return ContractionConfig::kProducerThreads * kProducerRegisters +
         cfg.math_threads() * kConsumerRegisters;
}

void lower_contraction(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                       const ContractionConfig& cfg, bool fast_functions, const std::string& arch,
                       const std::string& entry, VariantLayout* layout) {
  internal_check(sk.contraction.has_value(), "lower_contraction: not a contraction kernel");
  ContractionLowering(m, abi, sk, cfg, fast_functions, arch).run(entry);
  if (layout) *layout = VariantLayout{};
}

}  // namespace kiln
