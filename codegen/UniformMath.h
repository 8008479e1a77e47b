//===- UniformMath.h - pow, exp and log written once, for host and PTX ----===//
//
// The uniform values of a kernel (bias corrections, step sizes) are double
// math over hypers, and some of it is pow, exp or log, which PTX does not
// have. These are written here once, over an arithmetic backend, so that the
// host (HostUniforms::evaluate) and the direct PTX emitter compute the same
// bits: every step is an IEEE operation with one rounding (add, sub, mul,
// div, fma, rint) or exact bit manipulation, which both spell alike.
//
// A backend `A` provides the types F (a double), I (a 64-bit integer) and
// P (a predicate), and:
//   F c(double); F add/sub/mul/div(F, F); F fma(F, F, F); F neg(F);
//   F abs(F); F rint(F) (ties to even); F trunc(F); F fmin/fmax(F, F)
//   (NaN-ignoring); P lt/gt/eq(F, F) (ordered); P isNaN(F); P signBit(F);
//   P pand/por(P, P); P pnot(P); F select(P, F, F); I bits(F);
//   F fromBits(I); I shr(I, unsigned); I shl(I, unsigned);
//   I andBits(I, uint64_t); I orBits(I, uint64_t); I toInt(F) (an integral
//   double within 2^31); F toDouble(I).
//
// Accuracy (test/unit/UniformMathTest.cpp, against long double): log and
// exp within 0.8 ulp; pow within 0.8 ulp where |y| <= 2 or y is a step count
// up to 100, within 1.2 ulp where |y ln x| < 32, within 2 ulp for
// beta ** step (beta in [0.9, 1), any step),
// and within about |y ln x| 2^-58 relative in general (15 ulp at the
// overflow threshold with x near sqrt(2)). C's special cases (zeros,
// infinities, NaNs, negative bases) are exact.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_UNIFORMMATH_H
#define KFUSE_CODEGEN_UNIFORMMATH_H

#include "codegen/KernelPlan.h"

#include "llvm/ADT/bit.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace kfuse::uniform_math {

// ln 2 in two parts: kLn2Hi has 21 trailing zero bits, so k * kLn2Hi is exact
// for |k| < 2^21.
constexpr double kLn2Hi = 6.93147180369123816490e-01; // 0x3fe62e42fee00000
constexpr double kLn2Lo = 1.90821492927058770002e-10; // 0x3dea39ef35793c76
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kSqrt2 = 1.41421356237309514547e+00;
constexpr double kMinNormal = 2.2250738585072014e-308; // 2^-1022
constexpr double kTwo54 = 18014398509481984.0;         // 2^54

/// (hi + lo) = a + b exactly (Knuth's TwoSum).
template <typename A>
std::pair<typename A::F, typename A::F> twoSum(A &a, typename A::F x,
                                               typename A::F y) {
  auto s = a.add(x, y);
  auto yy = a.sub(s, x);
  auto err = a.add(a.sub(x, a.sub(s, yy)), a.sub(y, yy));
  return {s, err};
}

/// ln x as a double-double (hi, lo) for finite x > 0; garbage elsewhere
/// (callers select the special cases).
template <typename A>
std::pair<typename A::F, typename A::F> logParts(A &a, typename A::F x) {
  using F = typename A::F;
  // Subnormals scaled into the normal range; e counts the scaling.
  auto sub = a.lt(x, a.c(kMinNormal));
  F xs = a.select(sub, a.mul(x, a.c(kTwo54)), x);
  auto bits = a.bits(xs);
  F biased = a.toDouble(a.shr(bits, 52));
  // m in [1, 2), then in [sqrt(1/2), sqrt(2)): m - 1 is then small.
  F m = a.fromBits(
      a.orBits(a.andBits(bits, 0x000FFFFFFFFFFFFFull), 0x3FF0000000000000ull));
  auto big = a.gt(m, a.c(kSqrt2));
  m = a.select(big, a.mul(m, a.c(0.5)), m);
  F e = a.add(a.sub(biased, a.c(1023.0)),
              a.sub(a.select(big, a.c(1.0), a.c(0.0)),
                    a.select(sub, a.c(54.0), a.c(0.0))));
  // ln m = 2 atanh(s), s = f / (2 + f), f = m - 1 (exact): s in double-double.
  F f = a.sub(m, a.c(1.0));
  F dHi = a.add(a.c(2.0), f);
  F dLo = a.sub(f, a.sub(dHi, a.c(2.0)));
  F sHi = a.div(f, dHi);
  F residual = a.sub(a.fma(a.neg(sHi), dHi, f), a.mul(sHi, dLo));
  F sLo = a.div(residual, dHi);
  // 2 atanh(s) = 2s + s^3 (2/3 + z (2/5 + z (2/7 + ...))), z = s^2 <= 0.0295:
  // terms to s^25, the last below 2^-64 of 2s.
  F z = a.mul(sHi, sHi);
  F poly = a.c(2.0 / 25.0);
  for (int k = 23; k >= 3; k -= 2)
    poly = a.fma(poly, z, a.c(2.0 / k));
  F tail = a.mul(a.mul(sHi, z), poly);
  F lnmHi = a.add(sHi, sHi);
  // sLo's share: 2 sLo d(atanh s)/ds = 2 sLo / (1 - s^2), to 2^-9 of it.
  F twoSLo = a.add(sLo, sLo);
  F lnmLo = a.add(a.fma(twoSLo, z, twoSLo), tail);
  // e ln 2 + ln m.
  auto [t, tErr] = twoSum(a, a.mul(e, a.c(kLn2Hi)), lnmHi);
  F lo = a.add(tErr, a.fma(e, a.c(kLn2Lo), lnmLo));
  F hi = a.add(t, lo);
  return {hi, a.sub(lo, a.sub(hi, t))};
}

/// exp(hi + lo) for a double-double argument (|lo| <= ulp(hi)); +inf above
/// 760, +0 below -760, NaN for NaN.
template <typename A>
typename A::F expParts(A &a, typename A::F hi, typename A::F lo) {
  using F = typename A::F;
  // hi = k ln 2 + r, |r| <= ln(2) / 2; k clamped so that 2^k splits into two
  // normal factors (the arguments past the clamp are selected below).
  F k = a.rint(a.mul(hi, a.c(kInvLn2)));
  k = a.fmin(a.fmax(k, a.c(-1100.0)), a.c(1100.0));
  // r = hi - k ln 2 + lo as a double r and its rounding error c (k kLn2Lo
  // is as large as 2^-22, far above the error of r).
  F rHi = a.fma(a.neg(k), a.c(kLn2Hi), hi); // exact: k kLn2Hi is exact
  F rLo = a.fma(a.neg(k), a.c(kLn2Lo), lo);
  auto [r, c] = twoSum(a, rHi, rLo);
  // exp(r) = 1 + r + r^2 (1/2 + r (1/6 + ...)): terms to r^15/15!, the last
  // below 2^-62; exp(r + c) = exp(r) (1 + c), and exp(r) c = (1 + r) c to
  // 2^-56 of c.
  double factorial = 1.0;
  for (int n = 2; n <= 15; ++n)
    factorial *= n;
  F poly = a.c(1.0 / factorial);
  for (int n = 14; n >= 2; --n) {
    factorial /= n + 1;
    poly = a.fma(poly, r, a.c(1.0 / factorial));
  }
  F q = a.mul(a.mul(r, r), poly);
  F s = a.add(r, a.add(a.fma(r, c, c), q));
  F expR = a.add(a.c(1.0), s);
  // 2^k as 2^k1 2^k2: the first product is exact, the second rounds once
  // (into the subnormals or to infinity, where the result lies).
  F k1 = a.trunc(a.mul(k, a.c(0.5)));
  F k2 = a.sub(k, k1);
  auto power = [&](F exponent) {
    return a.fromBits(a.shl(a.toInt(a.add(exponent, a.c(1023.0))), 52));
  };
  F result = a.mul(a.mul(expR, power(k1)), power(k2));
  result = a.select(a.lt(hi, a.c(-760.0)), a.c(0.0), result);
  return a.select(a.gt(hi, a.c(760.0)), a.c(__builtin_inf()), result);
}

/// ln x, as C's log: -inf at +-0, NaN below 0, +inf at +inf.
template <typename A> typename A::F log(A &a, typename A::F x) {
  auto [hi, lo] = logParts(a, x);
  (void)lo;
  auto result = a.select(a.eq(x, a.c(__builtin_inf())), x, hi);
  result = a.select(a.lt(x, a.c(0.0)), a.c(__builtin_nan("")), result);
  result = a.select(a.eq(x, a.c(0.0)), a.c(-__builtin_inf()), result);
  return a.select(a.isNaN(x), x, result);
}

/// e^x, as C's exp.
template <typename A> typename A::F exp(A &a, typename A::F x) {
  return expParts(a, x, a.c(0.0));
}

/// x^y, as C's pow (C11 F.10.4.4).
template <typename A>
typename A::F pow(A &a, typename A::F x, typename A::F y) {
  using F = typename A::F;
  const F inf = a.c(__builtin_inf()), zero = a.c(0.0), one = a.c(1.0);
  F ax = a.abs(x), ay = a.abs(y);
  // |x|^y for finite x != 0 and finite y.
  auto [lHi, lLo] = logParts(a, ax);
  F pHi = a.mul(y, lHi);
  F pLo = a.fma(y, lLo, a.fma(y, lHi, a.neg(pHi)));
  F magnitude = expParts(a, pHi, pLo);
  // Infinite y: 1 at |x| = 1, else 0 or inf by which side of 1 |x| is on.
  auto yPositive = a.gt(y, zero);
  auto xAbove1 = a.gt(ax, one);
  F infiniteY = a.select(
      a.eq(ax, one), one,
      a.select(a.pnot(a.por(a.pand(yPositive, xAbove1),
                            a.pand(a.pnot(yPositive), a.pnot(xAbove1)))),
               zero, inf));
  magnitude = a.select(a.eq(ay, inf), infiniteY, magnitude);
  // x = +-0 or +-inf: 0 or inf by the sign of y.
  F atZero = a.select(yPositive, zero, inf);
  magnitude = a.select(a.eq(ax, zero), atZero, magnitude);
  magnitude =
      a.select(a.eq(ax, inf), a.select(yPositive, inf, zero), magnitude);
  // The sign: negative x to an odd integer power. y / 2 is exact, and every
  // |y| >= 2^53 is even.
  auto integral = a.eq(a.trunc(y), y);
  F half = a.mul(y, a.c(0.5));
  auto odd = a.pand(integral, a.pnot(a.eq(a.trunc(half), half)));
  auto negative = a.signBit(x);
  F result = a.select(a.pand(negative, odd), a.neg(magnitude), magnitude);
  // A finite negative x to a finite non-integer power.
  auto finiteNegative =
      a.pand(a.lt(x, zero), a.pand(a.lt(ax, inf), a.lt(ay, inf)));
  result = a.select(a.pand(finiteNegative, a.pnot(integral)),
                    a.c(__builtin_nan("")), result);
  result = a.select(a.por(a.isNaN(x), a.isNaN(y)), a.add(x, y), result);
  // pow(1, y) and pow(x, +-0) are 1, even for NaN.
  return a.select(a.por(a.eq(x, one), a.eq(y, zero)), one, result);
}

/// The values of `program` (its instructions in order, into `values`, one
/// each) over backend `a`; `loadArg(index)` gives an update argument's
/// value. False, with the values partly written, at an op the backend has
/// no form of (`a.supports(op)`). Beside the functions above, a backend
/// provides `supports(Op)`, `constant(double)` (a value, where c() may give
/// an operand), sqrt, floor, ceil, copysign, rem, tanh, `compare(predicate,
/// x, y)` (1.0 or 0.0; compareUniforms), `minMaxF32(x, y, maximum)` (of
/// the values rounded to f32, NaN first, -0 < +0) and its pow, exp and log.
template <typename A, typename LoadArg>
bool evaluateProgram(A &a, const std::vector<UniformInstr> &program,
                     LoadArg loadArg, typename A::F *values) {
  using Op = UniformInstr::Op;
  for (size_t index = 0; index < program.size(); ++index) {
    const UniformInstr &instr = program[index];
    if (!a.supports(instr.op))
      return false;
    auto x = [&](unsigned operand) { return values[instr.operands[operand]]; };
    typename A::F &result = values[index];
    switch (instr.op) {
    case Op::arg:
      result = loadArg(instr.arg);
      break;
    case Op::constant:
      result = a.constant(instr.constant);
      break;
    case Op::add:
      result = a.add(x(0), x(1));
      break;
    case Op::sub:
      result = a.sub(x(0), x(1));
      break;
    case Op::mul:
      result = a.mul(x(0), x(1));
      break;
    case Op::div:
      result = a.div(x(0), x(1));
      break;
    case Op::neg:
      result = a.neg(x(0));
      break;
    case Op::rem:
      result = a.rem(x(0), x(1));
      break;
    case Op::maximum:
    case Op::minimum:
      result = a.minMaxF32(x(0), x(1), instr.op == Op::maximum);
      break;
    case Op::maxnum:
      result = a.fmax(x(0), x(1));
      break;
    case Op::minnum:
      result = a.fmin(x(0), x(1));
      break;
    case Op::sqrt:
      result = a.sqrt(x(0));
      break;
    case Op::rsqrt:
      result = a.div(a.c(1.0), a.sqrt(x(0)));
      break;
    case Op::pow:
      result = a.pow(x(0), x(1));
      break;
    case Op::exp:
      result = a.exp(x(0));
      break;
    case Op::log:
      result = a.log(x(0));
      break;
    case Op::abs:
      result = a.abs(x(0));
      break;
    case Op::tanh:
      result = a.tanh(x(0));
      break;
    case Op::fma:
      result = a.fma(x(0), x(1), x(2));
      break;
    case Op::copysign:
      result = a.copysign(x(0), x(1));
      break;
    case Op::floor:
      result = a.floor(x(0));
      break;
    case Op::ceil:
      result = a.ceil(x(0));
      break;
    case Op::roundeven:
      result = a.rint(x(0));
      break;
    case Op::cmp:
      result = a.compare(instr.arg, x(0), x(1));
      break;
    case Op::select:
      // Any value but 0 is true, NaN included.
      result = a.select(a.pnot(a.eq(x(0), a.c(0.0))), x(1), x(2));
      break;
    }
  }
  return true;
}

/// The host backend: doubles, with the standard library's correctly rounded
/// operations.
struct HostArith {
  using F = double;
  using I = uint64_t;
  using P = bool;
  F c(double value) { return value; }
  F add(F x, F y) { return x + y; }
  F sub(F x, F y) { return x - y; }
  F mul(F x, F y) { return x * y; }
  F div(F x, F y) { return x / y; }
  F fma(F x, F y, F z) { return std::fma(x, y, z); }
  F neg(F x) { return -x; }
  F abs(F x) { return std::fabs(x); }
  F rint(F x) { return std::nearbyint(x); }
  F trunc(F x) { return std::trunc(x); }
  F fmin(F x, F y) { return std::fmin(x, y); }
  F fmax(F x, F y) { return std::fmax(x, y); }
  P lt(F x, F y) { return x < y; }
  P gt(F x, F y) { return x > y; }
  P eq(F x, F y) { return x == y; }
  P isNaN(F x) { return std::isnan(x); }
  P signBit(F x) { return std::signbit(x); }
  P pand(P x, P y) { return x && y; }
  P por(P x, P y) { return x || y; }
  P pnot(P x) { return !x; }
  F select(P condition, F x, F y) { return condition ? x : y; }
  I bits(F x) { return llvm::bit_cast<uint64_t>(x); }
  F fromBits(I x) { return llvm::bit_cast<double>(x); }
  I shr(I x, unsigned n) { return x >> n; }
  I shl(I x, unsigned n) { return x << n; }
  I andBits(I x, uint64_t mask) { return x & mask; }
  I orBits(I x, uint64_t mask) { return x | mask; }
  I toInt(F x) { return static_cast<uint64_t>(static_cast<int64_t>(x)); }
  F toDouble(I x) { return static_cast<double>(static_cast<int64_t>(x)); }

  bool supports(UniformInstr::Op) { return true; }
  F constant(double value) { return value; }
  F sqrt(F x) { return std::sqrt(x); }
  F floor(F x) { return std::floor(x); }
  F ceil(F x) { return std::ceil(x); }
  F copysign(F x, F y) { return std::copysign(x, y); }
  F rem(F x, F y) { return std::fmod(x, y); }
  F tanh(F x) { return std::tanh(x); }
  F compare(unsigned predicate, F x, F y) {
    return compareUniforms(predicate, x, y) ? 1.0 : 0.0;
  }
  /// arith.maximumf / minimumf as the device computes them (kfuse_maximumf
  /// takes floats): NaN wins, -0 < +0.
  F minMaxF32(F x, F y, bool maximum) {
    float a = static_cast<float>(x), b = static_cast<float>(y);
    if (std::isnan(a))
      return a;
    if (std::isnan(b))
      return b;
    if (a == b)
      return std::signbit(a) == maximum ? b : a;
    return (a > b) == maximum ? a : b;
  }
  F pow(F x, F y) { return uniform_math::pow(*this, x, y); }
  F exp(F x) { return uniform_math::exp(*this, x); }
  F log(F x) { return uniform_math::log(*this, x); }
};

inline double hostPow(double x, double y) {
  HostArith a;
  return pow(a, x, y);
}
inline double hostExp(double x) {
  HostArith a;
  return exp(a, x);
}
inline double hostLog(double x) {
  HostArith a;
  return log(a, x);
}

} // namespace kfuse::uniform_math

#endif // KFUSE_CODEGEN_UNIFORMMATH_H
