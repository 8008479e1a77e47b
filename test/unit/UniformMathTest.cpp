//===- UniformMathTest.cpp - pow, exp and log of kernel uniforms ----------===//
//
// codegen/UniformMath.h's host backend against long double references, in
// ulps of the double result, over the ranges optimizer uniforms take and the
// whole range; C's special cases against the standard library exactly; on
// a GPU, the direct PTX's functions (PtxEmitter) and the CUDA ones
// (CudaPrelude) against the host's, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include "codegen/CudaPrelude.h"
#include "codegen/PtxEmitter.h"
#include "codegen/UniformMath.h"
#include "runtime/NvJitLink.h"
#include "runtime/Nvrtc.h"

#include <fmt/format.h>

#include "gtest/gtest.h"

#include <random>

using namespace kfuse::uniform_math;

namespace {

/// |got - ref| in ulps of the double nearest ref (subnormal ulps below the
/// normal range); infinities and zeros must match exactly.
double ulpError(double got, long double ref) {
  double nearest = static_cast<double>(ref);
  if (std::isnan(nearest))
    return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isinf(nearest) || nearest == 0.0 || std::isinf(got))
    return got == nearest ? 0.0 : INFINITY;
  int exponent = std::max(std::ilogb(nearest), -1022);
  long double ulp = std::ldexp(1.0L, exponent - 52);
  return static_cast<double>(std::fabs(got - ref) / ulp);
}

struct Range {
  const char *name;
  double xLow, xHigh;
  double yLow, yHigh;
  bool integralY;
  double maxUlp;
};

TEST(UniformMath, PowAccuracy) {
  const Range ranges[] = {
      {"beta ** small step", 0.9, 0.9999, 1, 100, true, 0.8},
      {"beta ** step", 0.9, 0.9999, 1, 1e6, true, 2.0},
      {"step ** -0.8", 1, 1e7, -0.8, -0.8, true, 0.8},
      {"x near 1, |y| <= 2", 0.5, 2, -2, 2, false, 0.8},
      {"|y ln x| < 32", 0.75, 1.4, -80, 80, false, 1.2},
      {"toward overflow", 1, 1.42, 0, 2000, false, 16.0},
  };
  std::mt19937_64 generator(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const Range &range : ranges) {
    double worst = 0.0, worstX = 0.0, worstY = 0.0;
    for (int i = 0; i < 200000; ++i) {
      double x = range.xLow + (range.xHigh - range.xLow) * unit(generator);
      double y = range.yLow + (range.yHigh - range.yLow) * unit(generator);
      if (range.integralY) {
        x = range.xLow >= 1 ? std::floor(x) : x;
        y = range.yLow == range.yHigh ? y : std::floor(y);
      }
      double error = ulpError(hostPow(x, y), powl(x, y));
      if (error > worst) {
        worst = error;
        worstX = x;
        worstY = y;
      }
    }
    EXPECT_LE(worst, range.maxUlp)
        << range.name << ": pow(" << worstX << ", " << worstY << ")";
  }
}

TEST(UniformMath, ExpAndLogAccuracy) {
  std::mt19937_64 generator(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  double worstExp = 0.0, worstLog = 0.0;
  for (int i = 0; i < 400000; ++i) {
    double x = -745.0 + 1455.0 * unit(generator);
    worstExp = std::max(worstExp, ulpError(hostExp(x), expl(x)));
    double positive = std::exp(-740.0 + 1450.0 * unit(generator));
    worstLog = std::max(worstLog, ulpError(hostLog(positive), logl(positive)));
    double nearOne = 0.5 + 1.5 * unit(generator);
    worstLog = std::max(worstLog, ulpError(hostLog(nearOne), logl(nearOne)));
  }
  EXPECT_LE(worstExp, 0.8);
  EXPECT_LE(worstLog, 0.8);
  EXPECT_EQ(hostExp(800.0), INFINITY);
  EXPECT_EQ(hostExp(-800.0), 0.0);
  EXPECT_EQ(hostExp(-INFINITY), 0.0);
  EXPECT_EQ(hostExp(0.0), 1.0);
  EXPECT_TRUE(std::isnan(hostExp(NAN)));
  EXPECT_EQ(hostLog(1.0), 0.0);
  EXPECT_EQ(hostLog(0.0), -INFINITY);
  EXPECT_EQ(hostLog(-0.0), -INFINITY);
  EXPECT_EQ(hostLog(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(hostLog(-1.0)));
  EXPECT_TRUE(std::isnan(hostLog(NAN)));
  EXPECT_NEAR(hostLog(5e-324), std::log(5e-324), 1e-12);
}

TEST(UniformMath, PowSpecialCases) {
  const double values[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.5,
                           -0.5,
                           2.0,
                           -2.0,
                           3.0,
                           -3.0,
                           0.25,
                           1e308,
                           -1e308,
                           INFINITY,
                           -INFINITY,
                           NAN,
                           1e-310,
                           -1e-310,
                           1.5,
                           -1.5,
                           9007199254740993.0,
                           -9007199254740992.0,
                           0.999};
  for (double x : values)
    for (double y : values) {
      double got = hostPow(x, y), expected = std::pow(x, y);
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(got)) << "pow(" << x << ", " << y << ")";
        continue;
      }
      if (expected == 0.0 || std::isinf(expected) || expected == 1.0) {
        EXPECT_EQ(got, expected) << "pow(" << x << ", " << y << ")";
        EXPECT_EQ(std::signbit(got), std::signbit(expected))
            << "pow(" << x << ", " << y << ")";
        continue;
      }
      EXPECT_EQ(std::signbit(got), std::signbit(expected))
          << "pow(" << x << ", " << y << ")";
      EXPECT_LE(ulpError(got, powl(x, y)), 1.0)
          << "pow(" << x << ", " << y << ")";
    }
}

/// One thread a case: out[i] = pow(x[i], y[i]), out[n + i] = exp(x[i]),
/// out[2n + i] = log(x[i]), through the module's functions.
constexpr const char *kCheckEntry = R"ptx(
.visible .entry check_uniform_math(.param .u64 xs, .param .u64 ys,
                                   .param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<12>;
  .reg .f64 %fd<6>;
  ld.param.u64 %rd1, [xs];
  ld.param.u64 %rd2, [ys];
  ld.param.u64 %rd3, [out];
  ld.param.u32 %r5, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  setp.ge.u32 %p1, %r4, %r5;
  @%p1 bra $L_done;
  mul.wide.u32 %rd4, %r4, 8;
  mul.wide.u32 %rd5, %r5, 8;
  add.s64 %rd6, %rd1, %rd4;
  add.s64 %rd7, %rd2, %rd4;
  add.s64 %rd8, %rd3, %rd4;
  add.s64 %rd9, %rd8, %rd5;
  add.s64 %rd10, %rd9, %rd5;
  ld.global.f64 %fd1, [%rd6];
  ld.global.f64 %fd2, [%rd7];
  {
    .param .b64 r;
    .param .b64 a;
    .param .b64 b;
    st.param.f64 [a], %fd1;
    st.param.f64 [b], %fd2;
    call.uni (r), kfuse_pow_f64, (a, b);
    ld.param.f64 %fd3, [r];
  }
  {
    .param .b64 r;
    .param .b64 a;
    st.param.f64 [a], %fd1;
    call.uni (r), kfuse_exp_f64, (a);
    ld.param.f64 %fd4, [r];
  }
  {
    .param .b64 r;
    .param .b64 a;
    st.param.f64 [a], %fd1;
    call.uni (r), kfuse_log_f64, (a);
    ld.param.f64 %fd5, [r];
  }
  st.global.f64 [%rd8], %fd3;
  st.global.f64 [%rd9], %fd4;
  st.global.f64 [%rd10], %fd5;
$L_done:
  ret;
}
)ptx";

/// The same cases through the CUDA functions, compiled by NVRTC.
constexpr const char *kCheckCudaKernel = R"cuda(
extern "C" __global__ void check_uniform_math(const double *xs,
                                              const double *ys, double *out,
                                              unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  out[i] = kfuse_pow_f64(xs[i], ys[i]);
  out[n + i] = kfuse_exp_f64(xs[i]);
  out[2 * n + i] = kfuse_log_f64(xs[i]);
}
)cuda";

bool sameBits(double a, double b) {
  return llvm::bit_cast<uint64_t>(a) == llvm::bit_cast<uint64_t>(b) ||
         (std::isnan(a) && std::isnan(b));
}

/// The check kernel of `cubin` over (xs, ys): pow, then exp, then log.
std::vector<double> runCheck(kfuse::CudaDriver &driver,
                             const std::string &cubin,
                             const std::vector<double> &xs,
                             const std::vector<double> &ys) {
  using namespace kfuse;
  unsigned n = xs.size();
  size_t bytes = n * sizeof(double);
  std::vector<double> results(3 * size_t(n));
  llvm::Expected<DeviceBuffer> x = DeviceBuffer::allocate(driver, bytes);
  llvm::Expected<DeviceBuffer> y = DeviceBuffer::allocate(driver, bytes);
  llvm::Expected<DeviceBuffer> out = DeviceBuffer::allocate(driver, 3 * bytes);
  if (!x || !y || !out) {
    ADD_FAILURE() << "allocation failed";
    return results;
  }
  EXPECT_EQ(driver.cuMemcpyHtoD(x->get(), xs.data(), bytes), CUDA_SUCCESS);
  EXPECT_EQ(driver.cuMemcpyHtoD(y->get(), ys.data(), bytes), CUDA_SUCCESS);
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  EXPECT_EQ(driver.cuModuleLoadData(&module, cubin.data()), CUDA_SUCCESS);
  EXPECT_EQ(driver.cuModuleGetFunction(&function, module, "check_uniform_math"),
            CUDA_SUCCESS);
  CUdeviceptr xPointer = x->get(), yPointer = y->get(), outPointer = out->get();
  void *params[] = {&xPointer, &yPointer, &outPointer, &n};
  EXPECT_EQ(driver.launchKernel(function, (n + 255) / 256, 1, 256, 0, nullptr,
                                params, CudaDriver::LaunchMode::Plain),
            CUDA_SUCCESS);
  EXPECT_EQ(driver.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(driver.cuMemcpyDtoH(results.data(), out->get(), 3 * bytes),
            CUDA_SUCCESS);
  driver.cuModuleUnload(module);
  return results;
}

TEST(UniformMath, DeviceFunctionsMatchTheHostBitForBit) {
  using namespace kfuse;
  if (llvm::Error error = loadNvJitLink()) {
    llvm::consumeError(std::move(error));
    GTEST_SKIP() << "no nvJitLink";
  }
  // Built for sm_90 without a GPU, for the device's SM with one.
  bool gpu = kfuse::testing::haveGpu();
  llvm::Expected<DeviceInfo> device =
      gpu ? CudaDriver::get()->currentDevice()
          : llvm::Expected<DeviceInfo>(DeviceInfo());
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  PtxTarget target{gpu ? std::stoi(device->arch.substr(3)) : 90};
  std::string module =
      getPtxHeader(target) + getPtxUniformMathFunctions() + kCheckEntry;
  llvm::Expected<NvrtcResult> linked = compileWithNvJitLink(module, target.sm);
  ASSERT_TRUE(bool(linked)) << llvm::toString(linked.takeError());
  NvrtcOptions options;
  options.arch = fmt::format("sm_{}", target.sm);
  llvm::Expected<NvrtcResult> compiled = compileWithNvrtc(
      getCudaUniformMathFunctions(kCheckCudaKernel) + kCheckCudaKernel,
      "uniform_math.cu", options);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  if (!gpu)
    GTEST_SKIP() << "no CUDA device: built, not run";
  CudaDriver &driver = *CudaDriver::get();

  // Inputs: the accuracy test's ranges and the special values, paired.
  std::vector<double> xs, ys;
  std::mt19937_64 generator(13);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < 1 << 18; ++i) {
    xs.push_back(0.9 + 0.0999 * unit(generator));
    ys.push_back(std::floor(1 + 1e5 * unit(generator)));
    xs.push_back(std::exp(-740.0 + 1450.0 * unit(generator)));
    ys.push_back(-2.0 + 4.0 * unit(generator));
    xs.push_back(-745.0 + 1455.0 * unit(generator));
    ys.push_back(std::floor(-20.0 + 40.0 * unit(generator)));
  }
  const double special[] = {0.0,      -0.0,      1.0, -1.0,
                            0.5,      -2.0,      3.0, 1e-310,
                            INFINITY, -INFINITY, NAN, 9007199254740993.0};
  for (double x : special)
    for (double y : special) {
      xs.push_back(x);
      ys.push_back(y);
    }
  unsigned n = xs.size();
  for (auto [image, cubin] : {std::pair<const char *, const std::string *>{
                                  "direct PTX", &linked->cubin},
                              {"CUDA", &compiled->cubin}}) {
    std::vector<double> results = runCheck(driver, *cubin, xs, ys);
    unsigned mismatches = 0;
    for (unsigned i = 0; i < n; ++i) {
      bool same = sameBits(results[i], hostPow(xs[i], ys[i])) &&
                  sameBits(results[n + i], hostExp(xs[i])) &&
                  sameBits(results[2 * n + i], hostLog(xs[i]));
      if (!same && ++mismatches <= 5)
        ADD_FAILURE() << image << ": x " << xs[i] << " y " << ys[i]
                      << ": device pow " << results[i] << " exp "
                      << results[n + i] << " log " << results[2 * n + i]
                      << "; host " << hostPow(xs[i], ys[i]) << " "
                      << hostExp(xs[i]) << " " << hostLog(xs[i]);
    }
    EXPECT_EQ(mismatches, 0u) << image << ", of " << n;
  }
}

} // namespace
