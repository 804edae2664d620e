// Contractions: a statement that sums (or averages), over one index, the product of two tensor
// reads, each missing one of the output's two last indices:
//   c[i, j]    = sum(a[i, k] * w[k, j], k)
//   c[b, i, j] = sum(q[b, i, k] * kt[b, j, k], k) / 8        (batched, B read as [N, K])
//   y[i, j]    = sum(x[i, k] * w[k, j] * s[j], k)            (a scale of the output)
// These run on tensor cores (compiler/lower_contraction.h). The scheduler asks whether a
// reduction is one (schedule.cpp) and the kernel plan keeps the answer for the code generator
// and `kiln explain`; the analysis is made in one place, here.
//
// What qualifies, looking through pointwise temporaries (inlined) and widening casts:
//   - the statement's value is sum(body, k) or mean(body, k), its left-hand side has two
//     indices or more;
//   - body is a product (with divisions by k-free values) whose factors that depend on k are
//     exactly two loads, A and B, of f16 or bf16 tensors of the same type, each indexed by
//     distinct plain index variables; A carries the output's second-to-last index (M) and not
//     its last (N), B the reverse; every other index of A or B is an output index (a batch);
//   - or two loads of f32 tensors that the spec cuts to tf32 (`tf32(a[i, k]) * tf32(w[j, k])`,
//     through pointwise temporaries, or reads of lifted operands, TensorDecl::tf32), both with K
//     contiguous, in a kernel without strided inputs: tensor cores
//     read f32 operands as tf32 exactly so (toward zero) and take them K-major only;
//   - or two loads of f32 tensors the spec does not cut, in a kernel without strided inputs:
//     the same tiles on CUDA cores, an f32 FMA per product (ContractionShape::fma), as exact as
//     any f32 sum;
//   - the remaining factors (no k) multiply the sum afterwards: a scale evaluated per output
//     element (a mean divides by the extent of k the same way).
// Anything else is not a contraction and stays a reduction, with the reason kept for explain.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/program.h"

namespace kiln {

/// One operand of a contraction, as read: which of its dimensions is the M (or N) index, which
/// the reduced index, and which output dimension each other one follows.
struct ContractionOperand {
  std::string tensor;
  DType dtype = DType::bf16;
  int rank = 0;
  int mn_dim = 0;  // the dimension indexed by M (operand A) or N (operand B)
  int k_dim = 0;   // the dimension indexed by the reduced index
  // (operand dimension, output dimension) for each batch index the operand reads.
  std::vector<std::pair<int, int>> batch;

  /// Whether the reduced index is the contiguous one ("K-major": a[i, k], or w read as [N, K]).
  bool k_major() const { return k_dim == rank - 1; }
};

struct ContractionShape {
  std::string target;                // the tensor the statement defines
  std::vector<std::string> vars;     // its indices: the output space, batch..., M, N
  std::string k;                     // the reduced index
  ContractionOperand a, b;           // A carries M, B carries N
  std::vector<std::string> a_index;  // A's and B's indices as written (for explain)
  std::vector<std::string> b_index;
  /// The operands are f32 read as tf32 (a.dtype and b.dtype are f32).
  bool tf32 = false;
  /// f32 operands the spec does not cut: CUDA cores, an FMA per product (lower_contraction.h).
  bool fma() const { return a.dtype == DType::f32 && !tf32; }
  /// The factor applied to the sum at each output element, in `vars` (undefined when 1):
  /// the factors without k, and 1 / extent for a mean.
  Expr scale;
};

/// The contraction statement `s` of `k` computes, or why it is not one. `s`'s value must be a
/// top-level reduction; loads of pointwise temporaries of `k` are looked through.
std::variant<ContractionShape, std::string> analyze_contraction(const KernelDef& k, const Stmt& s);

/// A statement that defines an operand of a contraction computed per element (lift_operands).
struct LiftedOperand {
  TensorDecl decl;  // a temporary stored in f16 or bf16, laid out as the operand's widest read,
                    // or an f32 one cut to tf32 (TensorDecl::tf32), K contiguous
  Stmt def;         // its definition: the spec's cast of the operand's value
};
struct OperandLift {
  std::vector<LiftedOperand> operands;  // defined before `stmt`
  Stmt stmt;                            // the statement, a contraction of plain reads
};
/// A sum over k of a product whose factors that depend on k are a read and a cast to f16 or
/// bf16 of a value computed per element, or two such casts (`sum(bf16(x[i, k] * g[k]) *
/// w[k, j], k)`, through pointwise temporaries), rewritten as a contraction: each cast becomes
/// a temporary stored in its type (exactly: the spec rounds it there), which a step of its own
/// writes and the tensor cores read, laid out as its widest read that walks every index it
/// uses. `fresh` names the temporaries. nullopt where `s` is a contraction already or no such
/// rewrite is one. A side the spec cuts to tf32 (`tf32(...)`) becomes such a temporary where
/// it is computed or read with K not contiguous, laid out K-major (the tensor cores read tf32
/// operands K-major only). The compiler does not round an operand the spec computes in f32.
std::optional<OperandLift> lift_operands(const KernelDef& k, const Stmt& s,
                                         const std::function<std::string()>& fresh);
/// Whether a statement of contraction kernel `k` (its epilogue) evaluates a transcendental
/// function: exp, log, sigmoid or pow, and tanh or erf unless `fast_functions` (then they are
/// tanh.approx.f32 and a polynomial of it, StepPlan::fast_functions); else libdevice calls of
/// tens of instructions per element. The plan stages epilogues with any of these functions
/// through shared memory (in clusters of two unless one is a libdevice call), and the register
/// epilogue keeps one copy of their code (lower_contraction.h).
bool transcendental_epilogue(const KernelDef& k, bool fast_functions);

/// "bf16 reads", "f32 reads cut to tf32" or "f32 reads": the operands as the kernel reads them.
std::string operand_reads_text(const ContractionShape& c);

/// "A: a[i, k] (K contiguous), B: w[k, j] (N contiguous)".
std::string describe_operands(const ContractionShape& c);

}  // namespace kiln
