//===- ExactMathTest.cpp - the prelude's division and root, bit for bit ---===//
//
// kfuse_sqrt_rn against sqrtf and kfuse_rsqrt_rn against an f64 reciprocal
// root on every one of the 2^32 f32 bit patterns, and
// kfuse_div_rn and kfuse_div_rn_by (a divisor's reciprocal made once)
// against `/` on 2^32 pairs: random bit patterns (every
// exponent, subnormals, zeros, infinities, NaNs) and pairs whose quotient
// lands near 1, near the overflow threshold and among the subnormals. Both
// sides are compiled in the same source with NVRTC's default (IEEE) flags;
// results must match bit for bit, any NaN matching any NaN. GPU only.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include "codegen/CudaPrelude.h"
#include "runtime/CudaDriver.h"
#include "runtime/Nvrtc.h"

#include "gtest/gtest.h"

using namespace kfuse;

namespace {

constexpr const char *kCheckKernels = R"cuda(
struct kfuse_mismatches {
  unsigned long long count;
  unsigned int first_a, first_b;
};

static __device__ __forceinline__ bool kfuse_same(float x, float y) {
  return __float_as_uint(x) == __float_as_uint(y) || (x != x && y != y);
}

static __device__ __forceinline__ void kfuse_record(kfuse_mismatches *out,
                                                    float a, float b) {
  if (atomicAdd(&out->count, 1ull) == 0) {
    out->first_a = __float_as_uint(a);
    out->first_b = __float_as_uint(b);
  }
}

extern "C" __global__ void check_sqrt(kfuse_mismatches *out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x +
                              threadIdx.x;
       i < (1ull << 32); i += stride) {
    const float x = __uint_as_float((unsigned int)i);
    if (!kfuse_same(kfuse_sqrt_rn(x), sqrtf(x)))
      kfuse_record(out, x, 0.0f);
  }
}

// The reference root in f64, IEEE sqrt and division each within half an
// f64 ulp, rounded once to f32: kfuse_rsqrt_rn must agree wherever the true
// value is not within about 2^-52 of an f32 rounding boundary.
extern "C" __global__ void check_rsqrt(kfuse_mismatches *out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x +
                              threadIdx.x;
       i < (1ull << 32); i += stride) {
    const float x = __uint_as_float((unsigned int)i);
    if (!kfuse_same(kfuse_rsqrt_rn(x), (float)(1.0 / sqrt((double)x))))
      kfuse_record(out, x, 0.0f);
  }
}

static __device__ __forceinline__ unsigned long long kfuse_mix(
    unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

extern "C" __global__ void check_div(kfuse_mismatches *out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x +
                              threadIdx.x;
       i < (1ull << 32); i += stride) {
    const unsigned long long bits = kfuse_mix(i);
    unsigned int ua = (unsigned int)bits, ub = (unsigned int)(bits >> 32);
    const unsigned int sign = 0x80000000u, mantissa = 0x007fffffu;
    switch (i & 3) {
    case 0: // any two bit patterns
      break;
    case 1: // quotients near 1: equal exponents
      ub = (ub & (sign | mantissa)) | (ua & ~(sign | mantissa));
      break;
    case 2: // quotients near the overflow threshold (2^128)
      ua = (ua & (sign | mantissa)) | (0xfeu << 23);
      ub = (ub & (sign | mantissa)) | ((0x7fu - (ub >> 31 & 1u)) << 23);
      break;
    case 3: // subnormal quotients: tiny over about one
      ua = (ua & (sign | mantissa)) | ((ua >> 23 & 31u) << 23);
      ub = (ub & (sign | mantissa)) | ((0x7eu + (ub >> 23 & 3u)) << 23);
      break;
    }
    const float a = __uint_as_float(ua), b = __uint_as_float(ub);
    const float expected = a / b;
    if (!kfuse_same(kfuse_div_rn(a, b), expected) ||
        !kfuse_same(kfuse_div_rn_by(a, kfuse_recip_of(b)), expected))
      kfuse_record(out, a, b);
  }
}
)cuda";

struct Mismatches {
  unsigned long long count;
  unsigned int firstA, firstB;
};

/// Runs `kernel` of the check source over its 2^32 cases and returns what
/// it found.
Mismatches runCheck(const char *kernel) {
  CudaDriver &driver = *CudaDriver::get();
  llvm::Expected<DeviceInfo> device = driver.currentDevice();
  EXPECT_TRUE(bool(device)) << llvm::toString(device.takeError());
  NvrtcOptions options;
  options.arch = device->arch;
  llvm::Expected<NvrtcResult> compiled = compileWithNvrtc(
      getCudaPrelude().str() + kCheckKernels, "exact_math.cu", options);
  if (!compiled) {
    ADD_FAILURE() << llvm::toString(compiled.takeError());
    return {};
  }
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  EXPECT_EQ(driver.cuModuleLoadData(&module, compiled->cubin.data()),
            CUDA_SUCCESS);
  EXPECT_EQ(driver.cuModuleGetFunction(&function, module, kernel),
            CUDA_SUCCESS);
  llvm::Expected<DeviceBuffer> buffer =
      DeviceBuffer::allocate(driver, sizeof(Mismatches));
  EXPECT_TRUE(bool(buffer)) << llvm::toString(buffer.takeError());
  EXPECT_EQ(driver.cuMemsetD8(buffer->get(), 0, sizeof(Mismatches)),
            CUDA_SUCCESS);
  CUdeviceptr pointer = buffer->get();
  void *params[] = {&pointer};
  EXPECT_EQ(driver.launchKernel(function, unsigned(device->smCount) * 8, 1, 256,
                                0, nullptr, params,
                                CudaDriver::LaunchMode::Plain),
            CUDA_SUCCESS);
  Mismatches found{};
  EXPECT_EQ(driver.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(driver.cuMemcpyDtoH(&found, buffer->get(), sizeof(found)),
            CUDA_SUCCESS);
  driver.cuModuleUnload(module);
  return found;
}

TEST(ExactMathTest, CheckKernelsCompile) {
  NvrtcOptions options;
  options.arch = "sm_90";
  llvm::Expected<NvrtcResult> compiled = compileWithNvrtc(
      getCudaPrelude().str() + kCheckKernels, "exact_math.cu", options);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  // The helpers' side has no IEEE f32 division or root of its own: the
  // operators' side accounts for every one in the PTX.
  EXPECT_NE(compiled->ptx.find("rcp.approx.ftz.f64"), std::string::npos);
  EXPECT_NE(compiled->ptx.find("div.rn.f32"), std::string::npos);
}

TEST(ExactMathTest, SqrtMatchesSqrtfOnEveryFloat) {
  if (!kfuse::testing::haveGpu())
    GTEST_SKIP() << "no CUDA device";
  Mismatches found = runCheck("check_sqrt");
  EXPECT_EQ(found.count, 0u)
      << "first mismatch at bits 0x" << std::hex << found.firstA;
}

TEST(ExactMathTest, RsqrtIsTheOnceRoundedRootOnEveryFloat) {
  if (!kfuse::testing::haveGpu())
    GTEST_SKIP() << "no CUDA device";
  Mismatches found = runCheck("check_rsqrt");
  EXPECT_EQ(found.count, 0u)
      << "first mismatch at bits 0x" << std::hex << found.firstA;
}

TEST(ExactMathTest, DivMatchesTheOperator) {
  if (!kfuse::testing::haveGpu())
    GTEST_SKIP() << "no CUDA device";
  Mismatches found = runCheck("check_div");
  EXPECT_EQ(found.count, 0u) << "first mismatch at 0x" << std::hex
                             << found.firstA << " / 0x" << found.firstB;
}

} // namespace
