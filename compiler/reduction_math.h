// The running states of the reductions that looped rows fuse into an earlier pass
// (compiler/lower_reduction.cpp) and how two of them merge: written once over an arithmetic
// `A`, so that the code generator (A builds LLVM IR) and the CPU tests (A computes in float)
// run the same formulas.
//
// A provides `V` (a value), `cond` results of eq and gt, and
//   V num(double); V add(V, V); V sub(V, V); V mul(V, V); V div(V, V);
//   V max(V, V) (NaN-propagating, like a max reduction); V exp(V);
//   cond eq(V, V); cond gt(V, V); V select(cond, V, V).
// Merges take the states in a fixed order (first, second): the results must not depend on
// timing, and fma contraction makes even the symmetric-looking formulas order-dependent.
//
// A thread of a looped row updates its state once per chunk, tens of thousands of times on
// rows of millions of elements, so the running sums (the online sum, Welford's mean and M2)
// are compensated (Kahan) like the plain sums: their error then stays near eps instead of
// growing with the chunks (measured in tests/unit/compiler_reduction_math.cpp).
#pragma once

#include <cmath>

namespace kiln::reduction_math {

/// Adds v to the compensated sum (s, c) (Kahan): the sum is s - c, c what rounding has added
/// to s so far. Starts from (0, 0). Once the sum is infinite the correction (t - s) - y is
/// inf - inf = NaN: it is dropped (c = 0), so an infinite term gives an infinite sum, as the
/// plain sum and the interpreter do, and a NaN term still reaches s itself.
template <class A>
void kahan_add(A& a, typename A::V& s, typename A::V& c, typename A::V v) {
  auto y = a.sub(v, c);
  auto t = a.add(s, y);
  auto fix = a.sub(a.sub(t, s), y);
  c = a.select(a.eq(fix, fix), fix, a.num(0));
  s = t;
}

/// Whether v is finite: v - v is 0 for a finite v and NaN for +-inf and NaN (no fast-math
/// flag lets LLVM fold it).
template <class A>
auto finite(A& a, typename A::V v) {
  return a.eq(a.sub(v, v), a.num(0));
}

/// Online max+sum: m is the running max of the elements seen, s the sum of their terms
/// f * exp(a - m) measured against it. A looped row's thread keeps s compensated: when m
/// grows, s and its compensation are both rescaled (rescale is linear in s).
template <class V>
struct Online {
  V m, s;
};

/// s, measured against m_old, re-measured against m_new >= m_old: s * exp(m_old - m_new).
/// Equal maxima keep s: when both are -inf, exp(-inf - -inf) would be NaN. A running max of
/// -inf means that every element so far (if any) is at -inf: against a larger max their
/// terms are 0, although s may hold the NaN of exp(-inf - -inf), hence the explicit 0. So
/// s ends as the two-pass sum would: NaN only when the row's max is -inf (or NaN).
template <class A>
typename A::V rescale(A& a, typename A::V s, typename A::V m_old, typename A::V m_new) {
  auto scaled =
      a.select(a.eq(m_old, a.num(-INFINITY)), a.num(0), a.mul(s, a.exp(a.sub(m_old, m_new))));
  return a.select(a.eq(m_old, m_new), s, scaled);
}

template <class A>
Online<typename A::V> merge(A& a, const Online<typename A::V>& x, const Online<typename A::V>& y) {
  auto m = a.max(x.m, y.m);
  return {m, a.add(rescale(a, x.s, x.m, m), rescale(a, y.s, y.m, m))};
}

/// Welford: n elements (a float count), their mean and M2, the sum of their squared
/// deviations from that mean.
template <class V>
struct Welford {
  V n, mean, m2;
};

/// The mean of n elements summing to sum; 0 for none, so that merging them changes nothing.
template <class A>
typename A::V mean_of(A& a, typename A::V n, typename A::V sum) {
  return a.select(a.gt(n, a.num(0)), a.div(sum, n), a.num(0));
}

/// The first value that a thread's chunk sums are shifted by (add_shifted_sums): the running
/// mean, or before any element the chunk's first value; 0 when that is not finite, so that
/// an infinite element makes the chunk's sums infinite rather than NaN.
template <class A>
typename A::V shift(A& a, const Welford<typename A::V>& st, typename A::V first) {
  auto k = a.select(a.gt(st.n, a.num(0)), st.mean, first);
  return a.select(finite(a, k), k, a.num(0));
}

/// The mean of two means weighted (1 - w, w), written so that infinities combine as in a sum:
/// where delta = y - x is not finite (an infinite or NaN mean on either side), x + delta * w
/// would be inf - inf = NaN for a -inf mean against a finite one, while the plain sum of the
/// elements is -inf.
template <class A>
typename A::V weighted_mean(A& a, typename A::V x, typename A::V y, typename A::V w) {
  return a.add(a.mul(x, a.sub(a.num(1), w)), a.mul(y, w));
}

/// Adds a chunk of n elements x, given as s1 = sum(x - k) and s2 = sum((x - k)^2) with
/// k = shift(st, its first value), to the state st whose mean and M2 carry Kahan
/// compensations (the state is (n, mean - mean_c, m2 - m2_c); all start at 0). This is
/// Chan's merge (below) of st with the chunk's state (mean k + q, q = s1 / n; M2 s2 - s1 q),
/// its two running sums compensated: delta, the chunk's mean less st's, is
/// (k - mean) + q + mean_c, where k - mean is 0 once st holds an element. Shifting by a value
/// near the mean matters: s2 - s1 q loses about (mean - k)^2 / variance in relative accuracy
/// of M2 (k = 0 is the textbook one-pass formula).
template <class A>
void add_shifted_sums(A& a, Welford<typename A::V>& st, typename A::V& mean_c, typename A::V& m2_c,
                      typename A::V n, typename A::V k, typename A::V s1, typename A::V s2) {
  auto q = mean_of(a, n, s1);
  auto total = a.add(st.n, n);
  auto w = a.select(a.gt(total, a.num(0)), a.div(n, total), a.num(0));
  auto delta = a.add(a.sub(k, st.mean), a.add(q, mean_c));
  // delta is scaled before it is squared, as in merge.
  kahan_add(a, st.m2, m2_c,
            a.add(a.sub(s2, a.mul(s1, q)), a.mul(a.mul(delta, a.mul(st.n, w)), delta)));
  // An infinite element (or mean) makes delta infinite or NaN: then the mean is the weighted
  // mean of the two, -inf or +inf (NaN for both or a NaN) as the row's sum would be; its M2 is
  // already NaN (s2 - s1 q is inf - inf), as the two-pass M2 of such a row is.
  auto ok = finite(a, delta);
  auto mean = st.mean, c = mean_c;
  kahan_add(a, mean, c, a.mul(delta, w));
  st.mean = a.select(ok, mean, weighted_mean(a, st.mean, a.add(k, q), w));
  mean_c = a.select(ok, c, a.num(0));
  st.n = total;
}

/// Chan, Golub and LeVeque's merge: with delta = y.mean - x.mean and n = x.n + y.n,
/// mean = x.mean + delta * y.n / n and M2 = x.M2 + y.M2 + delta^2 * x.n * y.n / n. delta is
/// scaled before it is squared: against an empty x, delta is y's mean, whose square may
/// overflow, and inf * 0 would be NaN.
template <class A>
Welford<typename A::V> merge(A& a, const Welford<typename A::V>& x,
                             const Welford<typename A::V>& y) {
  auto n = a.add(x.n, y.n);
  auto w = a.select(a.gt(n, a.num(0)), a.div(y.n, n), a.num(0));
  auto delta = a.sub(y.mean, x.mean);
  auto mean = a.select(finite(a, delta), a.add(x.mean, a.mul(delta, w)),
                       weighted_mean(a, x.mean, y.mean, w));
  return {n, mean, a.add(a.add(x.m2, y.m2), a.mul(a.mul(delta, a.mul(x.n, w)), delta))};
}

}  // namespace kiln::reduction_math
