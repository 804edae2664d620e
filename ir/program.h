// Programs: kernels made of statements in index notation.
//
//   kernel add(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) {
//     y[i, j] = x[i, j] + b[j]
//   }
//
// A statement `t[i, j] = expr` binds the index variables of its left-hand side; `expr` is
// evaluated once for every point of their iteration space. Its target is an output (written
// exactly once in the kernel) or a temporary (any other new name, defined before any use, once).
// A tensor is read with one index variable per dimension; omitting a variable broadcasts
// (`b[j]` above), reordering transposes (`x[j, i]`). Each index variable has one extent per
// statement, inferred from where it indexes a declared dimension (or from the output's
// declared shape); all must agree. Dimensions are fixed integers or symbols bound at launch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/expr.h"
#include "ir/shape.h"

namespace kiln {

enum class TensorRole : uint8_t { input, output, temp };

struct TensorDecl {
  std::string name;
  DType dtype;  // storage type; a temp's is the compute type of its defining expression, or
                // the f16 or bf16 its value is a cast to (the scheduler's lifted operands)
  std::vector<Dim> shape;
  TensorRole role;
  SourceLoc loc;
  /// An input passed by value at launch (`eps: f32`, no brackets): shape empty, read by its
  /// bare name (ScalarRef). Outputs and temporaries are never scalars.
  bool scalar = false;
  /// An input whose strides are given at launch (`x: f32[M, N] strided`): element (i0, i1, ..)
  /// is at base + i0 * s0 + i1 * s1 + .., strides in elements, any value >= 0 (0 broadcasts).
  /// Only tensor inputs of rank >= 1 are strided; every other tensor is contiguous (row-major).
  bool strided = false;
  /// An f32 operand of a contraction the scheduler lifts (compiler/contraction.h), whose value is
  /// a cut to tf32 (`_o0[j, k] = tf32(w[k, j])`): stored, never recomputed where read, and read
  /// by the tensor cores as tf32. A spec's own temporaries never are (a `t[i, k] = tf32(...)`
  /// is recomputed where read like any pointwise temporary).
  bool tf32 = false;
  friend bool operator==(const TensorDecl& a, const TensorDecl& b);  // ignores loc
};

struct Stmt {
  std::string target;
  std::vector<std::string> indices;  // left-hand side index variables, distinct
  Expr value;
  SourceLoc loc;                                         // of the target name
  friend bool operator==(const Stmt& a, const Stmt& b);  // ignores loc
};

struct KernelDef {
  std::string name;
  std::vector<TensorDecl> inputs;   // declared order
  std::vector<TensorDecl> outputs;  // declared order
  std::vector<TensorDecl> temps;    // in order of definition; derived by the parser
  std::vector<Stmt> body;
  SourceLoc loc;

  /// Inputs, outputs or temps by name; nullptr if none.
  const TensorDecl* find_tensor(std::string_view name) const;
  /// Kernel parameters in launch order: inputs then outputs.
  std::vector<const TensorDecl*> params() const;
  /// Symbols of the parameters' shapes, in order of first appearance (inputs, then outputs).
  std::vector<std::string> symbols() const;
  friend bool operator==(const KernelDef& a, const KernelDef& b);  // ignores locs
};

struct Program {
  std::vector<KernelDef> kernels;
  const KernelDef* find_kernel(std::string_view name) const;
  friend bool operator==(const Program& a, const Program& b) = default;
};

/// Extent of every index variable of a statement (its left-hand side and its reductions),
/// inferred as described above. Throws UserError on a conflict or an index whose extent
/// cannot be inferred.
std::map<std::string, Dim> index_extents(const KernelDef& k, const Stmt& s);

/// Whether a statement of `k` loads tensor `name` (reduction bodies included).
bool loads_tensor(const KernelDef& k, std::string_view name);

/// Symbol values at launch.
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

/// Concrete extents of `shape`; throws UserError naming the symbol when one is unbound.
std::vector<int64_t> resolve_shape(const std::vector<Dim>& shape, const SymbolValues& syms);

}  // namespace kiln
