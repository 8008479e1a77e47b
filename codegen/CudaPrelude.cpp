//===- CudaPrelude.cpp - fixed device helpers of generated CUDA ----------===//
//
// bf16 and f16 travel as their 16-bit patterns in `unsigned short`, so the
// source needs neither cuda_bf16.h nor cuda_fp16.h and NVRTC compiles it
// without any include path.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaPrelude.h"
#include "codegen/UniformMath.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"

#include <fmt/format.h>

namespace kfuse {

static constexpr llvm::StringLiteral kPrelude = R"cuda(
// Programmatic dependent launch (sm_90 and later; the runtime launches
// kernels so): a kernel may then start while the previous kernel in its
// stream drains. Its first statement waits for that kernel's completion and
// memory, then lets the next kernel launch once all of its own blocks have
// started. Without a programmatic launch the wait returns at once.
static __device__ __forceinline__ void kfuse_grid_dependency_sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// bf16 -> f32 is exact: the bf16 bits are the high half of the f32.
static __device__ __forceinline__ float kfuse_bf16_to_f32(unsigned short x) {
  return __uint_as_float((unsigned int)x << 16);
}

// Element `odd` (0 or 1) of the two bf16 in a 32-bit word, exactly.
static __device__ __forceinline__ float kfuse_bf16x2_to_f32(unsigned int w,
                                                           int odd) {
  return __uint_as_float(odd ? (w & 0xffff0000u) : (w << 16));
}

// f32 -> bf16, rounding to nearest even; a NaN stays a (quiet) NaN. sm_80
// and later convert in one instruction (the integer rounding below costs
// about eight, which bounds 16-bit norms by issue rather than bandwidth).
static __device__ __forceinline__ unsigned short kfuse_f32_to_bf16(float f) {
#if __CUDA_ARCH__ >= 800
  unsigned short x;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(x) : "f"(f));
  return x;
#else
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (unsigned short)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
#endif
}

// Two f32 -> two bf16 in one 32-bit word, `lo` in the low half.
static __device__ __forceinline__ unsigned int kfuse_f32x2_to_bf16x2(float lo,
                                                                     float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned int x;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(x) : "f"(hi), "f"(lo));
  return x;
#else
  return (unsigned int)kfuse_f32_to_bf16(lo) |
         ((unsigned int)kfuse_f32_to_bf16(hi) << 16);
#endif
}

static __device__ __forceinline__ float kfuse_f16_to_f32(unsigned short x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
}

// f32 -> f16, rounding to nearest even.
static __device__ __forceinline__ unsigned short kfuse_f32_to_f16(float f) {
  unsigned short x;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(f));
  return x;
}

// Two f32 -> two f16 in one 32-bit word, `lo` in the low half.
static __device__ __forceinline__ unsigned int kfuse_f32x2_to_f16x2(float lo,
                                                                    float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned int x;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(x) : "f"(hi), "f"(lo));
  return x;
#else
  return (unsigned int)kfuse_f32_to_f16(lo) |
         ((unsigned int)kfuse_f32_to_f16(hi) << 16);
#endif
}

// arith.maximumf / arith.minimumf: a NaN operand gives NaN, -0 < +0.
static __device__ __forceinline__ float kfuse_maximumf(float a, float b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  if (a == b)
    return __float_as_int(a) < 0 ? b : a;
  return a > b ? a : b;
}

static __device__ __forceinline__ float kfuse_minimumf(float a, float b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  if (a == b)
    return __float_as_int(a) < 0 ? a : b;
  return a < b ? a : b;
}
// IEEE f32 division and square root, correctly rounded, without ptxas'
// expansion of div.rn.f32 and sqrt.rn.f32: a subroutine with a slow path
// that costs about 13 and 5 ms of compile time in every kernel using them.
// Where f64 runs at full rate the quotient or root is computed in f64 to
// within an f64 ulp and rounded once to f32. That is the correctly rounded
// f32 result: a quotient of two f32 that is not exactly an f32 midpoint lies
// at least 2^-49 (relative) from every one, a root 2^-51, and an exact
// midpoint (a subnormal quotient) comes out exact in f64. Two Newton steps
// take the hardware approximations (rcp.approx.f64, rsqrt.approx.f64) to
// f64 precision; a final residual step rounds. Elsewhere f64 is 1/32 to 1/64
// rate: the operators.
#if __CUDA_ARCH__ == 600 || __CUDA_ARCH__ == 700 || __CUDA_ARCH__ == 800 ||   \
    __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000
#define KFUSE_FULL_RATE_F64 1
#endif

#ifdef KFUSE_FULL_RATE_F64
// 1 / sqrt(x) to f64 precision: two Newton steps on the approximation.
static __device__ __forceinline__ double kfuse_rsqrt_f64(double x) {
  double y;
  asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
  y = __fma_rn(0.5 * y, __fma_rn(-x * y, y, 1.0), y);
  return __fma_rn(0.5 * y, __fma_rn(-x * y, y, 1.0), y);
}
#endif

// The divisor's reciprocal to f64 precision (the approximation, two Newton
// steps), made once where many elements share a divisor (a per-tensor
// value: the emitter puts it into the uniforms), and the quotient's residual
// step per element. The builtin, not inline asm: the compiler may also share
// one reciprocal among a vector's lanes.
struct kfuse_recip {
  double divisor, approx, reciprocal;
};

static __device__ __forceinline__ kfuse_recip kfuse_recip_of(float b) {
#ifdef KFUSE_FULL_RATE_F64
  const double y = b;
  const double r0 = __nvvm_rcp_approx_ftz_d(y);
  double r = __fma_rn(r0, __fma_rn(-y, r0, 1.0), r0);
  r = __fma_rn(r, __fma_rn(-y, r, 1.0), r);
  return {y, r0, r};
#else
  return {b, 0.0, 0.0};
#endif
}

static __device__ __forceinline__ float kfuse_div_rn_by(float a,
                                                        const kfuse_recip &d) {
#ifdef KFUSE_FULL_RATE_F64
  const double x = a;
  const double q = x * d.reciprocal;
  const double q1 = __fma_rn(__fma_rn(-d.divisor, q, x), d.reciprocal, q);
  // A zero, infinite or NaN operand makes the steps NaN (or a zero's sign
  // wrong); the plain product with the approximation gives IEEE's answer.
  return (float)(x != 0.0 && q1 == q1 ? q1 : x * d.approx);
#else
  return a / (float)d.divisor;
#endif
}

static __device__ __forceinline__ float kfuse_div_rn(float a, float b) {
  return kfuse_div_rn_by(a, kfuse_recip_of(b));
}

static __device__ __forceinline__ float kfuse_sqrt_rn(float a) {
#ifdef KFUSE_FULL_RATE_F64
  const double x = a;
  const double y = kfuse_rsqrt_f64(x);
  const double s = x * y;
  const double s1 = __fma_rn(__fma_rn(-s, s, x), 0.5 * y, s);
  // sqrt(+-0) and sqrt(inf) are their argument; a negative or NaN argument
  // is NaN through the approximation already.
  return a == 0.0f || a == __int_as_float(0x7f800000) ? a : (float)s1;
#else
  return sqrtf(a);
#endif
}

// math.rsqrt: 1 / sqrt(a) computed in f64 (the reciprocal root's two Newton
// steps) and rounded once, not a root and a division rounded each: half the
// f64 work, which bounds Adafactor's update phases, and the interpreter's
// value. +-0 gives +-inf, +inf 0, a negative or NaN argument NaN.
static __device__ __forceinline__ float kfuse_rsqrt_rn(float a) {
#ifdef KFUSE_FULL_RATE_F64
  const double y = kfuse_rsqrt_f64(a);
  if (a == 0.0f)
    return __int_as_float(0x7f800000 | (__float_as_int(a) & 0x80000000));
  return a == __int_as_float(0x7f800000) ? 0.0f : (float)y;
#else
  return 1.0f / sqrtf(a);
#endif
}

)cuda";

llvm::StringRef getCudaPrelude() { return kPrelude.drop_front(); }

/// Device helpers of `variance` row reductions: Chan et al.'s merge of two
/// parts' (count, mean, sum of squared deviations). The share of the second
/// part takes the fast division: its last-bit error is far below the
/// rounding of the sums it weighs, and the merge runs per thread and row.
static constexpr llvm::StringLiteral kMomentsPrelude = R"cuda(
static __device__ __forceinline__ void kfuse_merge_moments(
    float &n, float &mean, float &m2, float nb, float meanb, float m2b) {
  const float total = n + nb;
  const float share = total > 0.0f ? __fdividef(nb, total) : 0.0f;
  const float delta = meanb - mean;
  mean = fmaf(delta, share, mean);
  m2 = m2 + m2b + delta * delta * n * share;
  n = total;
}

// One butterfly step with the lane `m` away: both partners merge the lower
// lane's part first, so they end with the same bits.
static __device__ __forceinline__ void kfuse_shuffle_moments(
    float &n, float &mean, float &m2, int m, bool upper) {
  const float on = __shfl_xor_sync(0xffffffffu, n, m);
  const float om = __shfl_xor_sync(0xffffffffu, mean, m);
  const float oq = __shfl_xor_sync(0xffffffffu, m2, m);
  float an = upper ? on : n, am = upper ? om : mean, aq = upper ? oq : m2;
  kfuse_merge_moments(an, am, aq, upper ? n : on, upper ? mean : om,
                      upper ? m2 : oq);
  n = an;
  mean = am;
  m2 = aq;
}

// The butterfly step where both partners hold as many elements (every
// thread owns the same count): the merge is symmetric in its operands, so
// the partners need no ordering, and the count is not exchanged.
static __device__ __forceinline__ void kfuse_shuffle_equal_moments(
    float &n, float &mean, float &m2, int m) {
  const float om = __shfl_xor_sync(0xffffffffu, mean, m);
  const float oq = __shfl_xor_sync(0xffffffffu, m2, m);
  const float delta = om - mean;
  mean = 0.5f * (mean + om);
  m2 = (m2 + oq) + delta * delta * (0.5f * n);
  n = n + n;
}

// A thread's part of a variance, element by element: the sums of the
// elements shifted by its first one (which bounds the cancellation), made
// count, mean and sum of squared deviations by kfuse_moments_done.
struct kfuse_moments {
  float n, pivot, s, q;
};

static __device__ __forceinline__ void kfuse_moments_add(kfuse_moments &m,
                                                         float x) {
  if (m.n == 0.0f)
    m.pivot = x;
  const float d = x - m.pivot;
  m.s += d;
  m.q = fmaf(d, d, m.q);
  m.n += 1.0f;
}

static __device__ __forceinline__ void kfuse_moments_done(
    const kfuse_moments &m, float &n, float &mean, float &m2) {
  const float shift = m.n > 0.0f ? m.s / m.n : 0.0f;
  n = m.n;
  mean = m.pivot + shift;
  m2 = fmaxf(fmaf(-m.s, shift, m.q), 0.0f);
}
)cuda";

llvm::StringRef getMomentsPrelude() { return kMomentsPrelude.drop_front(); }

namespace {
/// uniform_math's backend that writes CUDA: a `const` per step, each double
/// operation an IEEE-rounded intrinsic (__dadd_rn and friends), so that
/// NVVM contracts nothing and the bits are the host's and the direct PTX's.
struct CudaArith {
  std::string &code;
  unsigned count = 0;

  using F = std::string;
  using I = std::string;
  using P = std::string;

  std::string def(const char *type, const std::string &expr) {
    std::string name = fmt::format("t{}", ++count);
    code += fmt::format("  const {} {} = {};\n", type, name, expr);
    return name;
  }
  F f(const std::string &expr) { return def("double", expr); }
  P p(const std::string &expr) { return def("bool", expr); }
  I i(const std::string &expr) { return def("unsigned long long", expr); }

  F c(double value) {
    return fmt::format("__longlong_as_double(0x{:016X}ll)",
                       llvm::bit_cast<uint64_t>(value));
  }
  F add(F x, F y) { return f(fmt::format("__dadd_rn({}, {})", x, y)); }
  F sub(F x, F y) { return f(fmt::format("__dsub_rn({}, {})", x, y)); }
  F mul(F x, F y) { return f(fmt::format("__dmul_rn({}, {})", x, y)); }
  F div(F x, F y) { return f(fmt::format("__ddiv_rn({}, {})", x, y)); }
  F fma(F x, F y, F z) {
    return f(fmt::format("__fma_rn({}, {}, {})", x, y, z));
  }
  F neg(F x) { return f("-" + x); }
  F abs(F x) { return f(fmt::format("fabs({})", x)); }
  F rint(F x) { return f(fmt::format("rint({})", x)); }
  F trunc(F x) { return f(fmt::format("trunc({})", x)); }
  F fmin(F x, F y) { return f(fmt::format("fmin({}, {})", x, y)); }
  F fmax(F x, F y) { return f(fmt::format("fmax({}, {})", x, y)); }
  P lt(F x, F y) { return p(fmt::format("{} < {}", x, y)); }
  P gt(F x, F y) { return p(fmt::format("{} > {}", x, y)); }
  P eq(F x, F y) { return p(fmt::format("{} == {}", x, y)); }
  P isNaN(F x) { return p(fmt::format("{0} != {0}", x)); }
  P signBit(F x) { return p(fmt::format("__double_as_longlong({}) < 0", x)); }
  P pand(P x, P y) { return p(fmt::format("{} && {}", x, y)); }
  P por(P x, P y) { return p(fmt::format("{} || {}", x, y)); }
  P pnot(P x) { return p("!" + x); }
  F select(P condition, F x, F y) {
    return f(fmt::format("{} ? {} : {}", condition, x, y));
  }
  I bits(F x) {
    return i(fmt::format("(unsigned long long)__double_as_longlong({})", x));
  }
  F fromBits(I x) {
    return f(fmt::format("__longlong_as_double((long long){})", x));
  }
  I shr(I x, unsigned n) { return i(fmt::format("{} >> {}", x, n)); }
  I shl(I x, unsigned n) { return i(fmt::format("{} << {}", x, n)); }
  I andBits(I x, uint64_t mask) {
    return i(fmt::format("{} & 0x{:016X}ull", x, mask));
  }
  I orBits(I x, uint64_t mask) {
    return i(fmt::format("{} | 0x{:016X}ull", x, mask));
  }
  I toInt(F x) {
    return i(fmt::format("(unsigned long long)(long long){}", x));
  }
  F toDouble(I x) { return f(fmt::format("(double)(long long){}", x)); }
};
} // namespace

std::string getCudaUniformMathFunctions(llvm::StringRef source) {
  // Calls in code, not in comments (a single-tensor kernel's host-computed
  // uniforms are shown as comments).
  std::string code;
  for (llvm::StringRef line : llvm::split(source, '\n'))
    if (!line.ltrim().starts_with("//"))
      code += line.str() + "\n";
  std::string out;
  for (const char *name : {"kfuse_pow_f64", "kfuse_exp_f64", "kfuse_log_f64"}) {
    if (!llvm::StringRef(code).contains(std::string(name) + "("))
      continue;
    std::string body;
    CudaArith a{body};
    llvm::StringRef kind = llvm::StringRef(name).substr(6, 3);
    std::string result = kind == "pow"   ? uniform_math::pow(a, "x", "y")
                         : kind == "exp" ? uniform_math::exp(a, "x")
                                         : uniform_math::log(a, "x");
    out += fmt::format(
        "// codegen/UniformMath.h's {0}: the bits of the host's and the direct "
        "PTX's.\nstatic __device__ __noinline__ double {1}(double x{2}) {{\n"
        "{3}  return {4};\n}}\n\n",
        kind.str(), name, kind == "pow" ? ", double y" : "", body, result);
  }
  return out;
}

} // namespace kfuse
