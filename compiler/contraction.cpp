// See contraction.h.
#include "compiler/contraction.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "compiler/plan.h"

namespace kiln {
namespace {

// Whether e reads index variable v (through loads or as a value).
bool uses(const Expr& e, const std::string& v) {
  if (const Load* l = e.as<Load>()) {
    return std::find(l->indices.begin(), l->indices.end(), v) != l->indices.end();
  }
  if (const IndexRef* r = e.as<IndexRef>()) return r->name == v;
  bool any = false;
  for_each_child(e, [&](const Expr& c) { any = any || uses(c, v); });
  return any;
}

// The factors of a product: `num` multiply, `den` divide.
void factors(const Expr& e, std::vector<Expr>& num, std::vector<Expr>& den, bool inverted) {
  if (const Binary* b = e.as<Binary>(); b && b->op == BinaryOp::mul) {
    factors(wrap(b->a), num, den, inverted);
    factors(wrap(b->b), num, den, inverted);
    return;
  }
  if (const Binary* b = e.as<Binary>(); b && b->op == BinaryOp::div) {
    factors(wrap(b->a), num, den, inverted);
    factors(wrap(b->b), num, den, !inverted);
    return;
  }
  (inverted ? den : num).push_back(e);
}

// The load under widening casts (a cast to f32, or to the loaded type, changes no value).
const Load* plain_load(const Expr& e) {
  if (const Cast* c = e.as<Cast>()) {
    const Expr inner = wrap(c->a);
    const Load* l = inner.as<Load>();
    if (l && (c->to == DType::f32 || c->to == l->stored)) return l;
    return nullptr;
  }
  return e.as<Load>();
}

// A factor that reads an operand: a load under widening casts, cut to tf32 or not, or a read of
// a lifted operand cut to tf32 (TensorDecl::tf32). `tf32`: an f32 the tensor cores read as tf32 (a
// cut f16 or bf16 value is itself: tf32 holds every one exactly).
struct OperandRead {
  const Load* load = nullptr;
  bool tf32 = false;
};
OperandRead operand_read(const KernelDef& k, const Expr& f) {
  if (const Unary* u = f.as<Unary>(); u && u->op == UnaryOp::tf32) {
    const Load* l = plain_load(wrap(u->a));
    return {l, l && l->stored == DType::f32};
  }
  const Load* l = plain_load(f);
  const TensorDecl* t = l ? k.find_tensor(l->tensor) : nullptr;
  return {l, l && l->stored == DType::f32 && t && t->tf32};
}

// Index variables e reads (through loads and as values), inserted into `out`.
void read_vars(const Expr& e, std::set<std::string>& out) {
  if (const Load* l = e.as<Load>()) out.insert(l->indices.begin(), l->indices.end());
  if (const IndexRef* r = e.as<IndexRef>()) out.insert(r->name);
  for_each_child(e, [&](const Expr& c) { read_vars(c, out); });
}

}  // namespace

std::optional<OperandLift> lift_operands(const KernelDef& k, const Stmt& s,
                                         const std::function<std::string()>& fresh) {
  const Reduce* red = s.value.as<Reduce>();
  if (red == nullptr || (red->op != ReduceOp::sum && red->op != ReduceOp::mean) ||
      red->indices.size() != 1 || s.indices.size() < 2 ||
      std::holds_alternative<ContractionShape>(analyze_contraction(k, s))) {
    return std::nullopt;
  }
  const std::string& kv = red->indices[0];
  const std::string& m = s.indices[s.indices.size() - 2];
  const std::string& n = s.indices.back();
  Inliner inliner(k, [&](const Stmt& st) { return recomputed_temp(k, st); });
  Rename identity;
  for (const std::string& v : s.indices) identity[v] = v;
  identity[kv] = kv;
  const Expr body = inliner.rewrite(wrap(red->body), identity);
  if (any_node({body},
               [](const Expr& e) { return e.as<Reduce>() || e.as<Scan>() || e.as<Gather>(); })) {
    return std::nullopt;  // pointwise arithmetic only
  }
  std::vector<Expr> num, den, rest;
  factors(body, num, den, false);
  for (const Expr& f : den) {
    if (uses(f, kv)) return std::nullopt;
  }
  // The factors that depend on k, by side: those that read M are A's, those that read N B's.
  std::array<std::vector<Expr>, 2> side;
  for (const Expr& f : num) {
    if (!uses(f, kv)) {
      rest.push_back(f);
    } else if (uses(f, m) == uses(f, n)) {
      return std::nullopt;  // both, or neither (a factor of k alone belongs in a side's cast)
    } else {
      side[uses(f, m) ? 0 : 1].push_back(f);
    }
  }
  OperandLift out;
  std::array<Expr, 2> operand;
  std::array<std::string, 2> type{};  // as the tensor cores read it: "bf16", "f16" or "tf32"
  const std::map<std::string, Dim> extents = index_extents(k, s);
  for (int i = 0; i < 2; ++i) {
    const std::vector<Expr>& g = side[static_cast<size_t>(i)];
    if (g.size() != 1) return std::nullopt;
    const OperandRead read = operand_read(k, g[0]);
    const bool cut = cut_to_tf32(g[0]);
    // A read the tensor cores take as it is: f16 or bf16, or f32 cut to tf32 with K contiguous.
    if (read.load && (!read.tf32 || read.load->indices.back() == kv)) {
      operand[i] = g[0];
      type[i] = read.tf32 ? "tf32" : to_string(read.load->stored);
      continue;
    }
    // The spec rounds the side: a cast to f16 or bf16, stored in that type exactly, or a cut
    // to tf32, stored in f32 with K contiguous.
    const Cast* cast = g[0].as<Cast>();
    if (!cut && (!cast || (cast->to != DType::bf16 && cast->to != DType::f16))) {
      return std::nullopt;
    }
    const DType stored = cut ? DType::f32 : cast->to;
    // Laid out as its widest read that walks every index it depends on.
    std::set<std::string> vars;
    read_vars(g[0], vars);
    const Load* main = nullptr;  // the first such read
    any_node({g[0]}, [&](const Expr& e) {
      const Load* l = e.as<Load>();
      if (!l || std::set<std::string>(l->indices.begin(), l->indices.end()) != vars ||
          vars.size() != l->indices.size()) {
        return false;
      }
      main = l;
      return true;
    });
    if (main == nullptr) return std::nullopt;
    std::vector<std::string> layout = main->indices;
    if (cut) {  // K last
      std::erase(layout, kv);
      layout.push_back(kv);
    }
    LiftedOperand op;
    std::vector<Dim> shape;
    for (const std::string& v : layout) shape.push_back(extents.at(v));
    op.decl = TensorDecl{fresh(), stored, std::move(shape), TensorRole::temp, s.loc};
    op.decl.tf32 = cut;
    op.def = Stmt{op.decl.name, layout, g[0], s.loc};
    operand[i] = make_load(op.decl.name, layout, stored, s.loc);
    type[i] = cut ? "tf32" : to_string(stored);
    out.operands.push_back(std::move(op));
  }
  if (out.operands.empty() || type[0] != type[1]) return std::nullopt;
  Expr product = make_binary(BinaryOp::mul, operand[0], operand[1]);
  for (const Expr& f : rest) product = make_binary(BinaryOp::mul, product, f);
  for (const Expr& f : den) product = make_binary(BinaryOp::div, product, f);
  out.stmt =
      Stmt{s.target, s.indices, make_reduce(red->op, red->indices, product, s.value.loc()), s.loc};
  // Only where the rewrite is a contraction.
  KernelDef check = k;
  for (const LiftedOperand& op : out.operands) {
    check.temps.push_back(op.decl);
    check.body.push_back(op.def);
  }
  if (!std::holds_alternative<ContractionShape>(analyze_contraction(check, out.stmt))) {
    return std::nullopt;
  }
  return out;
}

std::string operand_reads_text(const ContractionShape& c) {
  return c.tf32 ? std::string("f32 reads cut to tf32")
                : fmt::format("{} reads", to_string(c.a.dtype));
}

std::string describe_operands(const ContractionShape& c) {
  auto side = [](const ContractionOperand& o, const std::vector<std::string>& idx, char mn) {
    return fmt::format("{}[{}] ({} contiguous)", o.tensor, fmt::join(idx, ", "),
                       o.k_major() ? 'K' : mn);
  };
  return fmt::format("A: {}, B: {}", side(c.a, c.a_index, 'M'), side(c.b, c.b_index, 'N'));
}

std::variant<ContractionShape, std::string> analyze_contraction(const KernelDef& k, const Stmt& s) {
  const Reduce* red = s.value.as<Reduce>();
  if (red == nullptr) return std::string("not a reduction");
  if (red->op != ReduceOp::sum && red->op != ReduceOp::mean) {
    return fmt::format("a {} is not a sum of products", to_string(red->op));
  }
  if (red->indices.size() > 1) {
    return fmt::format("it reduces over {} indices; a contraction reduces over one",
                       red->indices.size());
  }
  if (s.indices.size() < 2) {
    return std::string(
        "its output has fewer than two indices (a matrix-vector product is "
        "memory-bound: it stays a reduction)");
  }
  // Through pointwise temporaries, as every reader sees them (a lifted operand, stored
  // narrower than it computes, is read from memory: lift_operands below).
  Inliner inliner(k, [&](const Stmt& st) { return recomputed_temp(k, st); });
  Rename identity;
  for (const std::string& v : s.indices) identity[v] = v;
  identity[red->indices[0]] = red->indices[0];
  const Expr body = inliner.rewrite(wrap(red->body), identity);

  std::vector<Expr> num, den;
  factors(body, num, den, false);
  std::vector<OperandRead> operands;
  Expr scale;
  auto times = [&](const Expr& f, bool divide) {
    if (!scale.defined()) {
      scale = divide ? make_binary(BinaryOp::div, make_const(1, DType::f32), f) : f;
    } else {
      scale = make_binary(divide ? BinaryOp::div : BinaryOp::mul, scale, f);
    }
  };
  for (const Expr& f : den) {
    if (uses(f, red->indices[0]))
      return fmt::format("it divides by a value that depends on {}", red->indices[0]);
    times(f, true);
  }
  for (const Expr& f : num) {
    if (!uses(f, red->indices[0])) {
      times(f, false);
      continue;
    }
    const OperandRead r = operand_read(k, f);
    if (r.load == nullptr) {
      return fmt::format(
          "a factor that depends on {} is not a tensor read (an operand computed per element "
          "runs on tensor cores where the spec rounds it: bf16(x[i, k] * g[k]) * w[k, j])",
          red->indices[0]);
    }
    operands.push_back(r);
  }
  if (operands.size() != 2) {
    return fmt::format("{} factor(s) depend on {}, not two{}", operands.size(), red->indices[0],
                       operands.size() > 2
                           ? " (an operand computed per element runs on tensor cores where the "
                             "spec rounds it: bf16(x[i, k] * g[k]) * w[k, j])"
                           : "");
  }
  const std::string& m = s.indices[s.indices.size() - 2];
  const std::string& n = s.indices.back();
  auto has = [](const Load* l, const std::string& v) {
    return std::find(l->indices.begin(), l->indices.end(), v) != l->indices.end();
  };
  if (has(operands[1].load, m) && !has(operands[0].load, m)) std::swap(operands[0], operands[1]);
  ContractionShape c;
  c.target = s.target;
  c.vars = s.indices;
  c.k = red->indices[0];
  c.tf32 = operands[0].tf32;
  const DType dt = operands[0].load->stored;
  auto type_text = [](const OperandRead& r) {
    return r.tf32 ? std::string("tf32") : std::string(to_string(r.load->stored));
  };
  for (int side = 0; side < 2; ++side) {
    const Load* l = operands[side].load;
    const std::string& mine = side == 0 ? m : n;
    const std::string& other = side == 0 ? n : m;
    if (l->stored != DType::bf16 && l->stored != DType::f16 && l->stored != DType::f32) {
      return fmt::format("operand {} is {} (contractions take f16, bf16 and f32)", l->tensor,
                         to_string(l->stored));
    }
    // Contraction kernels read no strides yet (kernel_plan.cpp refuses a strided input in
    // one): an f32 product, which ran as a reduction before contractions took f32, stays one.
    if (l->stored == DType::f32) {
      for (const TensorDecl& in : k.inputs) {
        if (in.strided) {
          return fmt::format(
              "an f32 contraction in a kernel with a strided input ({}) stays a reduction "
              "(contraction kernels read no strides yet)",
              in.name);
        }
      }
    }
    if (l->stored != dt || operands[side].tf32 != c.tf32) {
      return fmt::format("the operands are {} and {} (one type is needed)", type_text(operands[0]),
                         type_text(operands[side]));
    }
    if (!has(l, mine) || has(l, other)) {
      return fmt::format("operand {} must read {} and not {}", l->tensor, mine, other);
    }
    std::set<std::string> seen(l->indices.begin(), l->indices.end());
    if (seen.size() != l->indices.size()) {
      return fmt::format("operand {} repeats an index", l->tensor);
    }
    ContractionOperand& o = side == 0 ? c.a : c.b;
    o.tensor = l->tensor;
    o.dtype = l->stored;
    o.rank = static_cast<int>(l->indices.size());
    for (int d = 0; d < o.rank; ++d) {
      const std::string& v = l->indices[static_cast<size_t>(d)];
      if (v == mine) {
        o.mn_dim = d;
      } else if (v == c.k) {
        o.k_dim = d;
      } else {
        auto it = std::find(s.indices.begin(), s.indices.end(), v);
        // Batch indices come before M and N in the output (other placements stay reductions).
        if (it == s.indices.end() ||
            it - s.indices.begin() >= static_cast<long>(s.indices.size()) - 2) {
          return fmt::format("operand {} reads {} in a place the tile scheduler cannot batch",
                             l->tensor, v);
        }
        o.batch.emplace_back(d, static_cast<int>(it - s.indices.begin()));
      }
    }
    // The contiguous dimension must be M/N or K: a batch index there leaves no tile rows.
    if (o.k_dim != o.rank - 1 && o.mn_dim != o.rank - 1) {
      return fmt::format("operand {}'s contiguous index is a batch index", l->tensor);
    }
    if (c.tf32 && !o.k_major()) {
      return fmt::format(
          "operand {} is cut to tf32 and read with {} contiguous (tf32 tensor cores read "
          "operands with {} contiguous)",
          l->tensor, mine, c.k);
    }
    (side == 0 ? c.a_index : c.b_index) = l->indices;
  }
  if (red->op == ReduceOp::mean) {
    const Dim extent = index_extents(k, s).at(red->indices[0]);
    times(extent.is_fixed() ? make_const(static_cast<double>(extent.value()), DType::f32)
                            : make_cast(DType::f32, make_sym(extent.name()), s.loc),
          true);
  }
  c.scale = scale;
  return c;
}

bool transcendental_epilogue(const KernelDef& k, bool fast_functions) {
  return any_node(statement_values(k), [&](const Expr& e) {
    if (const Unary* u = e.as<Unary>()) {
      return u->op == UnaryOp::exp || u->op == UnaryOp::log || u->op == UnaryOp::sigmoid ||
             (!fast_functions && (u->op == UnaryOp::tanh || u->op == UnaryOp::erf));
    }
    const Binary* b = e.as<Binary>();
    return b && b->op == BinaryOp::pow;
  });
}

}  // namespace kiln
