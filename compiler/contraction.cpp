// See contraction.h.
#include "compiler/contraction.h"

#include <fmt/format.h>

#include <algorithm>
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

}  // namespace

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
  // Through pointwise temporaries, as every reader sees them.
  Inliner inliner(k, [&](const Stmt& st) {
    const TensorDecl* t = k.find_tensor(st.target);
    return t && t->role == TensorRole::temp && !st.value.as<Reduce>();
  });
  Rename identity;
  for (const std::string& v : s.indices) identity[v] = v;
  identity[red->indices[0]] = red->indices[0];
  const Expr body = inliner.rewrite(wrap(red->body), identity);

  std::vector<Expr> num, den;
  factors(body, num, den, false);
  std::vector<const Load*> operands;
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
    const Load* l = plain_load(f);
    if (l == nullptr) {
      return fmt::format(
          "a factor that depends on {} is not a tensor read (an operand computed "
          "per element is not on tensor cores yet)",
          red->indices[0]);
    }
    operands.push_back(l);
  }
  if (operands.size() != 2) {
    return fmt::format("{} factor(s) depend on {}, not two", operands.size(), red->indices[0]);
  }
  const std::string& m = s.indices[s.indices.size() - 2];
  const std::string& n = s.indices.back();
  auto has = [](const Load* l, const std::string& v) {
    return std::find(l->indices.begin(), l->indices.end(), v) != l->indices.end();
  };
  if (has(operands[1], m) && !has(operands[0], m)) std::swap(operands[0], operands[1]);
  ContractionShape c;
  c.target = s.target;
  c.vars = s.indices;
  c.k = red->indices[0];
  const DType dt = operands[0]->stored;
  for (int side = 0; side < 2; ++side) {
    const Load* l = operands[side];
    const std::string& mine = side == 0 ? m : n;
    const std::string& other = side == 0 ? n : m;
    if (l->stored != DType::bf16 && l->stored != DType::f16) {
      return fmt::format("operand {} is {} (tensor cores take f16 and bf16 here)", l->tensor,
                         to_string(l->stored));
    }
    if (l->stored != dt) {
      return fmt::format("the operands are {} and {} (one type is needed)", to_string(dt),
                         to_string(l->stored));
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
