//===- CudaEmitterTest.cpp - the CUDA code generator ----------------------===//
//
// emitCuda on hand-written fused IR: the kernel plan (parameter mapping,
// deduplication, temporaries of unfused chains, hazards), the shape of the
// source, its diagnostics, and that every source compiles with NVRTC for
// sm_80 and sm_90 into the expected vector memory instructions.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaEmitter.h"
#include "codegen/Pipeline.h"
#include "dialect/KFuseDialect.h"
#include "dialect/KFuseUpdate.h"
#include "runtime/Nvrtc.h"
#include "test/unit/EmitterTestSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nvrtc.h>

using namespace mlir;
using namespace kfuse;

namespace {

using namespace kfuse::testing;

class CudaEmitterTest : public EmitterTest {
protected:
  static std::string compile(const KernelPlan &plan, const std::string &arch,
                             bool ptxOnly) {
    return compileSource(plan.source, plan.name, arch, ptxOnly);
  }
};

KernelParam tensor(unsigned index, DType dtype, bool read, bool written) {
  return {KernelParam::Kind::Tensor, index, dtype, read, written};
}
KernelParam scalar(unsigned index) {
  return {KernelParam::Kind::Scalar, index, DType::f32, true, false};
}
KernelParam temporary(unsigned index, DType dtype, bool read, bool written) {
  return {KernelParam::Kind::Temporary, index, dtype, read, written};
}

void expectParams(const KernelInfo &kernel,
                  const std::vector<KernelParam> &expected) {
  ASSERT_EQ(kernel.params.size(), expected.size()) << kernel.name;
  for (size_t i = 0; i < expected.size(); ++i) {
    const KernelParam &got = kernel.params[i];
    const KernelParam &want = expected[i];
    EXPECT_EQ(int(got.kind), int(want.kind)) << kernel.name << " param " << i;
    EXPECT_EQ(got.index, want.index) << kernel.name << " param " << i;
    EXPECT_EQ(got.dtype, want.dtype) << kernel.name << " param " << i;
    EXPECT_EQ(got.read, want.read) << kernel.name << " param " << i;
    EXPECT_EQ(got.written, want.written) << kernel.name << " param " << i;
  }
}

// SGD with momentum-free decay, f32, 16-byte aligned: one kernel, the
// param read and written through one pointer, the grad read twice as an
// input but passed once.
constexpr llvm::StringLiteral kSgdF32 = R"mlir(
func.func @sgd(%p: tensor<1024xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
               %g: tensor<1024xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
               %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32})
    attributes {kfuse.update, kfuse.vector_width = 4 : i64, kfuse.index_bits = 32 : i64, kfuse.alignment = 16 : i64} {
  %0 = kfuse.fused (%p, %g, %g, %lr) : (tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, f32) -> tensor<1024xf32> {
  ^bb0(%pe: f32, %ge: f32, %ge2: f32, %l: f32):
    %tenth = arith.constant 0.1 : f32
    %scale = arith.mulf %l, %tenth : f32
    %gg = arith.mulf %ge, %ge2 : f32
    %d = arith.mulf %scale, %gg : f32
    %n = arith.subf %pe, %d : f32
    kfuse.yield %n : f32
  }
  kfuse.write %0 to %p : tensor<1024xf32>
  return
}
)mlir";

TEST_F(CudaEmitterTest, F32VectorKernel) {
  FailureOr<KernelPlan> plan = emit(kSgdF32);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  EXPECT_EQ(plan->name, "sgd");
  EXPECT_EQ(plan->numel, 1024);
  EXPECT_EQ(plan->alignment, 16u);
  EXPECT_TRUE(plan->temporaries.empty());
  ASSERT_EQ(plan->args.size(), 3u);
  EXPECT_EQ(plan->args[0].name, "param");
  EXPECT_EQ(plan->args[0].role, ArgRole::param);
  EXPECT_EQ(plan->args[1].role, ArgRole::grad);
  EXPECT_EQ(plan->args[2].role, ArgRole::hyper);
  ASSERT_TRUE(plan->args[2].defaultValue.has_value());
  EXPECT_FLOAT_EQ(*plan->args[2].defaultValue, 1.0e-2f);

  ASSERT_EQ(plan->kernels.size(), 1u);
  const KernelInfo &kernel = plan->kernels[0];
  EXPECT_EQ(kernel.name, "kfuse_sgd_0");
  EXPECT_EQ(kernel.vectorWidth, 4u);
  EXPECT_EQ(kernel.indexBits, 32u);
  EXPECT_EQ(kernel.blockSize, 256u);
  EXPECT_EQ(kernel.numBodyOps, 5u);
  // The fused op's name starts at line 6, column 8 of the buffer.
  EXPECT_TRUE(llvm::StringRef(kernel.location).ends_with(":6:8"))
      << kernel.location;
  // The hyper is no parameter: lr * 0.1 depends only on scalars, so the
  // host computes it at launch, in double, from the constant's exact f32
  // value, and passes it in the uniform struct.
  expectParams(kernel, {tensor(0, DType::f32, true, true),
                        tensor(1, DType::f32, true, false)});
  EXPECT_EQ(plan->bytesPerElement(), 12u);
  ASSERT_TRUE(kernel.hostUniforms.has_value());
  ASSERT_EQ(kernel.hostUniforms->fields.size(), 1u);
  double args[3] = {0.0, 0.0, 0.5};
  float field = 0.0f;
  kernel.hostUniforms->evaluate(args, &field);
  EXPECT_EQ(field, static_cast<float>(0.5 * static_cast<double>(0.1f)));

  const std::string &source = plan->source;
  EXPECT_FALSE(contains(source, "#include"));
  EXPECT_TRUE(contains(source, "extern \"C\" __global__ void "
                               "__launch_bounds__(256)\nkfuse_sgd_0(const "
                               "kfuse_sgd_0_uniforms u, float *__restrict__ "
                               "param, const float *__restrict__ grad)"))
      << source;
  EXPECT_TRUE(contains(source, "struct alignas(16) kfuse_f32x4 {")) << source;
  EXPECT_TRUE(contains(source, "const unsigned int count = 1024u;"));
  // 1024 is a multiple of 4: no tail loop.
  EXPECT_FALSE(contains(source, "count % 4")) << source;
  // The host's computation is shown before the kernel, not in it.
  size_t kernelStart = source.find("kfuse_sgd_0(");
  size_t shown = source.find("//  const double v0 = lr * 0.100000001f;");
  ASSERT_NE(shown, std::string::npos) << source;
  EXPECT_LT(shown, kernelStart) << source;
  EXPECT_FALSE(contains(source.substr(kernelStart), "lr *")) << source;

  std::string ptx = compileAll(*plan);
  EXPECT_TRUE(hasVectorLoad(ptx)) << ptx;
  EXPECT_TRUE(contains(ptx, "st.global.v4")) << ptx;
  EXPECT_FALSE(contains(ptx, ".f64")) << ptx;
}

// Uniform math the host program does not cover (a comparison and a select
// of hypers) stays on the device: the hyper is a double parameter and every
// thread computes the uniforms.
constexpr llvm::StringLiteral kClampedLr = R"mlir(
func.func @clamped(%p: tensor<1024xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
                   %g: tensor<1024xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
                   %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr"})
    attributes {kfuse.update, kfuse.vector_width = 4 : i64, kfuse.index_bits = 32 : i64, kfuse.alignment = 16 : i64} {
  %0 = kfuse.fused (%p, %g, %lr) : (tensor<1024xf32>, tensor<1024xf32>, f32) -> tensor<1024xf32> {
  ^bb0(%pe: f32, %ge: f32, %l: f32):
    %zero = arith.constant 0.0 : f32
    %positive = arith.cmpf ogt, %l, %zero : f32
    %rate = arith.select %positive, %l, %zero : f32
    %d = arith.mulf %rate, %ge : f32
    %n = arith.subf %pe, %d : f32
    kfuse.yield %n : f32
  }
  kfuse.write %0 to %p : tensor<1024xf32>
  return
}
)mlir";

TEST_F(CudaEmitterTest, UniformSelectIsComputedOnTheHost) {
  FailureOr<KernelPlan> plan = emit(kClampedLr);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  ASSERT_EQ(plan->kernels.size(), 1u);
  const KernelInfo &kernel = plan->kernels[0];
  // The comparison and the select are host instructions (1.0 or 0.0 for
  // the comparison); the kernel takes the clamped rate as its field.
  ASSERT_TRUE(kernel.hostUniforms.has_value());
  const HostUniforms &uniforms = *kernel.hostUniforms;
  EXPECT_TRUE(llvm::any_of(uniforms.program, [](const UniformInstr &instr) {
    return instr.op == UniformInstr::Op::cmp;
  }));
  ASSERT_EQ(uniforms.fields.size(), 1u);
  float rate = 0.0f;
  double args[3] = {0.0, 0.0, 0.5};
  uniforms.evaluate(args, &rate);
  EXPECT_EQ(rate, 0.5f);
  args[2] = -0.5;
  uniforms.evaluate(args, &rate);
  EXPECT_EQ(rate, 0.0f);
  args[2] = std::nan("");
  uniforms.evaluate(args, &rate);
  EXPECT_EQ(rate, 0.0f); // ogt is false for NaN
  const std::string &source = plan->source;
  EXPECT_TRUE(contains(source, "computed on the host")) << source;
  std::string ptx = compileAll(*plan);
  EXPECT_TRUE(hasVectorLoad(ptx)) << ptx;
}

// AdamW as kfuse-specialize and kfuse-fuse-elementwise leave it for bf16
// params and grads and f32 states; 1001 elements leave a tail of 1.
constexpr llvm::StringLiteral kAdamWMixed = R"mlir(
func.func @adamw(
    %param: tensor<1001xbf16> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<1001xbf16> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: tensor<1001xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %exp_avg_sq: tensor<1001xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg_sq"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.999 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 1.0e-2 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update, kfuse.vector_width = 8 : i64, kfuse.index_bits = 32 : i64, kfuse.alignment = 16 : i64} {
  %0:3 = kfuse.fused (%param, %grad, %exp_avg, %exp_avg_sq, %lr, %beta1, %beta2, %eps, %weight_decay, %step)
      : (tensor<1001xbf16>, tensor<1001xbf16>, tensor<1001xf32>, tensor<1001xf32>, f32, f32, f32, f32, f32, f32)
      -> (tensor<1001xbf16>, tensor<1001xf32>, tensor<1001xf32>) {
  ^bb0(%p: bf16, %g: bf16, %m: f32, %v: f32, %lr_: f32, %b1: f32, %b2: f32, %e: f32, %wd: f32, %t: f32):
    %one = arith.constant 1.000000e+00 : f32
    %b1t = math.powf %b1, %t : f32
    %b2t = math.powf %b2, %t : f32
    %bc1 = arith.subf %one, %b1t : f32
    %bc2 = arith.subf %one, %b2t : f32
    %step_size = arith.divf %lr_, %bc1 : f32
    %bc2_sqrt = math.sqrt %bc2 : f32
    %lr_wd = arith.mulf %lr_, %wd : f32
    %decay = arith.subf %one, %lr_wd : f32
    %omb1 = arith.subf %one, %b1 : f32
    %omb2 = arith.subf %one, %b2 : f32
    %pc = kfuse.convert %p : bf16 to f32
    %gc = kfuse.convert %g : bf16 to f32
    %pd = arith.mulf %pc, %decay : f32
    %m0 = arith.mulf %m, %b1 : f32
    %gs = arith.mulf %gc, %omb1 : f32
    %mn = arith.addf %m0, %gs : f32
    %v0 = arith.mulf %v, %b2 : f32
    %g2 = arith.mulf %gc, %gc : f32
    %g2s = arith.mulf %g2, %omb2 : f32
    %vn = arith.addf %v0, %g2s : f32
    %vs = math.sqrt %vn : f32
    %vh = arith.divf %vs, %bc2_sqrt : f32
    %den = arith.addf %vh, %e : f32
    %ms = arith.mulf %step_size, %mn : f32
    %up = arith.divf %ms, %den : f32
    %pn = arith.subf %pd, %up : f32
    %pb = kfuse.convert %pn : f32 to bf16
    kfuse.yield %pb, %mn, %vn : bf16, f32, f32
  }
  kfuse.write %0#0 to %param : tensor<1001xbf16>
  kfuse.write %0#1 to %exp_avg : tensor<1001xf32>
  kfuse.write %0#2 to %exp_avg_sq : tensor<1001xf32>
  return
}
)mlir";

TEST_F(CudaEmitterTest, AdamWBf16ParamsF32States) {
  FailureOr<KernelPlan> plan = emit(kAdamWMixed);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  EXPECT_EQ(plan->numel, 1001);
  ASSERT_EQ(plan->args.size(), 10u);
  EXPECT_EQ(plan->args[0].dtype, DType::bf16);
  EXPECT_EQ(plan->args[2].dtype, DType::f32);
  EXPECT_EQ(plan->args[9].name, "step");
  ASSERT_EQ(plan->kernels.size(), 1u);
  const KernelInfo &kernel = plan->kernels[0];
  EXPECT_EQ(kernel.vectorWidth, 8u);
  std::vector<KernelParam> expected = {
      tensor(0, DType::bf16, true, true), tensor(1, DType::bf16, true, false),
      tensor(2, DType::f32, true, true), tensor(3, DType::f32, true, true)};
  expectParams(kernel, expected);
  // bf16 param read+written, bf16 grad read, two f32 states read+written.
  EXPECT_EQ(plan->bytesPerElement(), 2u * 2 + 2 + 2 * 4 * 2);

  const std::string &source = plan->source;
  EXPECT_TRUE(contains(source, "(const kfuse_adamw_0_uniforms u, unsigned "
                               "short *__restrict__ param, const unsigned "
                               "short *__restrict__ grad, float "
                               "*__restrict__ exp_avg"))
      << source;
  EXPECT_TRUE(contains(source, "struct alignas(16) kfuse_bf16x8 {\n  "
                               "unsigned short v[8];"))
      << source;
  EXPECT_TRUE(contains(source, "struct alignas(16) kfuse_f32x8 {\n  float "
                               "v[8];"))
      << source;
  EXPECT_TRUE(contains(source, "kfuse_bf16_to_f32(param_in)")) << source;
  EXPECT_TRUE(contains(source, "kfuse_f32_to_bf16(")) << source;
  // Both pow calls (in double, uniform) are the host's: the device code
  // has none.
  size_t uniforms = source.find("struct kfuse_adamw_0_uniforms");
  ASSERT_NE(uniforms, std::string::npos);
  EXPECT_LT(source.find(" = kfuse_pow_f64(beta1, step);"), uniforms) << source;
  EXPECT_FALSE(contains(source.substr(uniforms), "pow(")) << source;
  // The program: bias corrections 1 - 0.9^2 and 1 - 0.999^2 at step 2.
  ASSERT_TRUE(kernel.hostUniforms.has_value());
  double args[10] = {0, 0, 0, 0, 1e-3, 0.9, 0.999, 1e-8, 0.01, 2.0};
  std::vector<float> fields(kernel.hostUniforms->fields.size());
  kernel.hostUniforms->evaluate(args, fields.data());
  EXPECT_TRUE(llvm::is_contained(
      fields, static_cast<float>(1e-3 / (1.0 - std::pow(0.9, 2.0)))))
      << "no step size among the fields";
  EXPECT_TRUE(llvm::is_contained(
      fields, static_cast<float>(std::sqrt(1.0 - std::pow(0.999, 2.0)))))
      << "no bias correction among the fields";
  // The tail of 1001 % 8 elements.
  EXPECT_TRUE(contains(source, "for (unsigned int i = vectors * 8u + tid; "
                               "i < count; i += stride)"))
      << source;

  std::string ptx = compileAll(*plan);
  EXPECT_TRUE(hasVectorLoad(ptx)) << ptx;
  EXPECT_TRUE(contains(ptx, "st.global.v4")) << ptx;
}

/// The cubin NVRTC makes of `source` with kfuse's options for sm_90, with
/// or without -minimal (called directly: the runtime always adds it).
static std::string cubinOf(const std::string &source, bool minimal) {
  std::vector<const char *> options = {"--std=c++17", "-default-device",
                                       "-arch=sm_90"};
  if (minimal)
    options.push_back("-minimal");
  nvrtcProgram program = nullptr;
  EXPECT_EQ(
      nvrtcCreateProgram(&program, source.c_str(), "k.cu", 0, nullptr, nullptr),
      NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcCompileProgram(program, options.size(), options.data()),
            NVRTC_SUCCESS);
  size_t size = 0;
  EXPECT_EQ(nvrtcGetCUBINSize(program, &size), NVRTC_SUCCESS);
  std::string cubin(size, '\0');
  EXPECT_EQ(nvrtcGetCUBIN(program, cubin.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&program);
  return cubin;
}

// The runtime compiles with -minimal, which leaves textures, device-side
// runtime calls and runtime API types undeclared: generated code uses none,
// so the cubin is the same bytes.
TEST_F(CudaEmitterTest, MinimalLeavesTheCubinAsIs) {
  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  if (major * 100 + minor < 1204)
    GTEST_SKIP() << "NVRTC " << major << "." << minor << " has no -minimal";
  FailureOr<KernelPlan> plan = emit(kAdamWMixed);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  std::string full = cubinOf(plan->source, false);
  ASSERT_FALSE(full.empty());
  EXPECT_TRUE(full == cubinOf(plan->source, true));
}

// f16 storage with a dynamic number of elements and 64-bit indexing.
constexpr llvm::StringLiteral kF16Dynamic = R"mlir(
func.func @scale(%p: tensor<?xf16> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
                 %g: tensor<?xf16> {kfuse.role = #kfuse.role<grad>, kfuse.name = "g"},
                 %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr"})
    attributes {kfuse.update, kfuse.vector_width = 8 : i64, kfuse.index_bits = 64 : i64, kfuse.alignment = 16 : i64} {
  %0 = kfuse.fused (%p, %g, %lr) : (tensor<?xf16>, tensor<?xf16>, f32) -> tensor<?xf16> {
  ^bb0(%pe: f16, %ge: f16, %l: f32):
    %pc = arith.extf %pe : f16 to f32
    %gc = kfuse.convert %ge : f16 to f32
    %d = arith.mulf %l, %gc : f32
    %n = arith.subf %pc, %d : f32
    %nh = arith.truncf %n : f32 to f16
    kfuse.yield %nh : f16
  }
  kfuse.write %0 to %p : tensor<?xf16>
  return
}
)mlir";

TEST_F(CudaEmitterTest, F16DynamicNumel64BitIndex) {
  FailureOr<KernelPlan> plan = emit(kF16Dynamic);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  EXPECT_EQ(plan->numel, -1);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].indexBits, 64u);
  expectParams(plan->kernels[0], {tensor(0, DType::f16, true, true),
                                  tensor(1, DType::f16, true, false)});
  const std::string &source = plan->source;
  EXPECT_TRUE(contains(source, "(const kfuse_scale_0_uniforms u, unsigned "
                               "short *__restrict__ p, const unsigned short "
                               "*__restrict__ g, long long n)"))
      << source;
  EXPECT_TRUE(contains(source, "const unsigned long long count = (unsigned "
                               "long long)n;"))
      << source;
  EXPECT_TRUE(contains(source, "kfuse_f16_to_f32(p_in)")) << source;
  EXPECT_TRUE(contains(source, "kfuse_f32_to_f16(")) << source;
  EXPECT_TRUE(contains(source, "// The last count % 8 elements.")) << source;
  std::string ptx = compileAll(*plan);
  EXPECT_TRUE(hasVectorLoad(ptx)) << ptx;
  EXPECT_TRUE(contains(ptx, "st.global.v4")) << ptx;
  EXPECT_TRUE(contains(ptx, "cvt.rn.f16.f32")) << ptx;
}

// No kfuse attributes: vector width 1, 64-bit indexing, element alignment.
constexpr llvm::StringLiteral kScalarOnly = R"mlir(
func.func @plain(%p: tensor<100xf32> {kfuse.role = #kfuse.role<param>},
                 %g: tensor<100xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  %0 = kfuse.fused (%p, %g) : (tensor<100xf32>, tensor<100xf32>) -> tensor<100xf32> {
  ^bb0(%pe: f32, %ge: f32):
    %n = arith.subf %pe, %ge : f32
    kfuse.yield %n : f32
  }
  kfuse.write %0 to %p : tensor<100xf32>
  return
}
)mlir";

TEST_F(CudaEmitterTest, VectorWidthOneHasNoVectorAccess) {
  FailureOr<KernelPlan> plan = emit(kScalarOnly);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  EXPECT_EQ(plan->alignment, 4u);
  EXPECT_EQ(plan->args[0].name, "arg0");
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].vectorWidth, 1u);
  EXPECT_EQ(plan->kernels[0].indexBits, 64u);
  EXPECT_FALSE(contains(plan->source, "reinterpret_cast")) << plan->source;
  EXPECT_FALSE(contains(plan->source, "struct alignas")) << plan->source;
  std::string ptx = compileAll(*plan);
  EXPECT_FALSE(contains(ptx, ".v2.")) << ptx;
  EXPECT_FALSE(contains(ptx, ".v4.")) << ptx;
}

// An unfused chain: a predicate temporary, a result both written and read
// later, and a write that must wait for the argument's last reader.
constexpr llvm::StringLiteral kUnfusedChain = R"mlir(
func.func @chain(%p: tensor<64xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
                 %g: tensor<64xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "g"},
                 %s: tensor<64xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "s"},
                 %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr"})
    attributes {kfuse.update, kfuse.vector_width = 4 : i64, kfuse.index_bits = 32 : i64, kfuse.alignment = 16 : i64} {
  %pos = kfuse.fused (%g) : (tensor<64xf32>) -> tensor<64xi1> {
  ^bb0(%ge: f32):
    %zero = arith.constant 0.0 : f32
    %c = arith.cmpf ogt, %ge, %zero : f32
    kfuse.yield %c : i1
  }
  %step = kfuse.fused (%pos, %g, %lr) : (tensor<64xi1>, tensor<64xf32>, f32) -> tensor<64xf32> {
  ^bb0(%c: i1, %ge: f32, %l: f32):
    %zero = arith.constant 0.0 : f32
    %d = arith.mulf %l, %ge : f32
    %r = arith.select %c, %d, %zero : f32
    kfuse.yield %r : f32
  }
  %new = kfuse.fused (%p, %step) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%pe: f32, %se: f32):
    %n = arith.subf %pe, %se : f32
    kfuse.yield %n : f32
  }
  %delta = kfuse.fused (%p, %new) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%pe: f32, %ne: f32):
    %d = arith.subf %ne, %pe : f32
    kfuse.yield %d : f32
  }
  kfuse.write %new to %p : tensor<64xf32>
  kfuse.write %delta to %s : tensor<64xf32>
  return
}
)mlir";

TEST_F(CudaEmitterTest, UnfusedChainTemporaries) {
  FailureOr<KernelPlan> plan = emit(kUnfusedChain);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  ASSERT_EQ(plan->temporaries.size(), 3u);
  EXPECT_EQ(plan->temporaries[0], DType::pred);
  EXPECT_EQ(plan->temporaries[1], DType::f32);
  EXPECT_EQ(plan->temporaries[2], DType::f32);
  ASSERT_EQ(plan->kernels.size(), 4u);
  expectParams(plan->kernels[0], {tensor(1, DType::f32, true, false),
                                  temporary(0, DType::pred, false, true)});
  // lr reaches kernel 1 through its host-computed uniforms.
  expectParams(plan->kernels[1], {temporary(0, DType::pred, true, false),
                                  tensor(1, DType::f32, true, false),
                                  temporary(1, DType::f32, false, true)});
  ASSERT_TRUE(plan->kernels[1].hostUniforms.has_value());
  double args[4] = {0, 0, 0, 0.25};
  float lr = 0.0f;
  plan->kernels[1].hostUniforms->evaluate(args, &lr);
  EXPECT_EQ(lr, 0.25f);
  // Kernel 3 still reads the old p: kernel 2 keeps the new p in a
  // temporary, and kernel 3 stores it to p.
  expectParams(plan->kernels[2], {tensor(0, DType::f32, true, false),
                                  temporary(1, DType::f32, true, false),
                                  temporary(2, DType::f32, false, true)});
  expectParams(plan->kernels[3], {tensor(0, DType::f32, true, true),
                                  temporary(2, DType::f32, true, false),
                                  tensor(2, DType::f32, false, true)});
  for (unsigned i = 0; i < 4; ++i)
    EXPECT_EQ(plan->kernels[i].name, "kfuse_chain_" + std::to_string(i));
  const std::string &source = plan->source;
  EXPECT_TRUE(contains(source, "unsigned char *__restrict__ tmp0")) << source;
  EXPECT_TRUE(contains(source, "struct alignas(4) kfuse_predx4 {")) << source;
  EXPECT_TRUE(contains(source, "p_out = tmp2_in;")) << source;
  std::string ptx = compileAll(*plan);
  EXPECT_TRUE(hasVectorLoad(ptx)) << ptx;
}

// Every supported body op, compiled.
constexpr llvm::StringLiteral kAllOps = R"mlir(
func.func @ops(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
               %q: tensor<?xbf16> {kfuse.role = #kfuse.role<state>, kfuse.name = "q"},
               %a: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "a"})
    attributes {kfuse.update, kfuse.vector_width = 2 : i64, kfuse.index_bits = 32 : i64, kfuse.alignment = 8 : i64} {
  %0:2 = kfuse.fused (%p, %q, %a) : (tensor<?xf32>, tensor<?xbf16>, f32) -> (tensor<?xf32>, tensor<?xbf16>) {
  ^bb0(%x: f32, %qb: bf16, %y: f32):
    %inf = arith.constant 0x7F800000 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %neg = arith.constant -2.5 : f32
    %t = arith.constant true
    %hb = arith.constant 1.5 : bf16
    %qf = arith.extf %qb : bf16 to f32
    %0 = arith.addf %x, %y : f32
    %1 = arith.subf %0, %neg : f32
    %2 = arith.mulf %1, %qf : f32
    %3 = arith.divf %2, %y : f32
    %4 = arith.negf %3 : f32
    %5 = arith.remf %4, %y : f32
    %6 = arith.maximumf %5, %x : f32
    %7 = arith.minimumf %6, %inf : f32
    %8 = arith.maxnumf %7, %nan : f32
    %9 = arith.minnumf %8, %x : f32
    %10 = math.sqrt %9 : f32
    %11 = math.rsqrt %10 : f32
    %12 = math.powf %11, %y : f32
    %13 = math.exp %12 : f32
    %14 = math.log %13 : f32
    %15 = math.absf %14 : f32
    %16 = math.tanh %15 : f32
    %17 = math.fma %16, %x, %y : f32
    %18 = math.copysign %17, %neg : f32
    %c0 = arith.cmpf false, %18, %x : f32
    %c1 = arith.cmpf oeq, %18, %x : f32
    %c2 = arith.cmpf ogt, %18, %x : f32
    %c3 = arith.cmpf oge, %18, %x : f32
    %c4 = arith.cmpf olt, %18, %x : f32
    %c5 = arith.cmpf ole, %18, %x : f32
    %c6 = arith.cmpf one, %18, %x : f32
    %c7 = arith.cmpf ord, %18, %x : f32
    %c8 = arith.cmpf ueq, %18, %x : f32
    %c9 = arith.cmpf ugt, %18, %x : f32
    %c10 = arith.cmpf uge, %18, %x : f32
    %c11 = arith.cmpf ult, %18, %x : f32
    %c12 = arith.cmpf ule, %18, %x : f32
    %c13 = arith.cmpf une, %18, %x : f32
    %c14 = arith.cmpf uno, %18, %x : f32
    %c15 = arith.cmpf true, %18, %x : f32
    %b0 = arith.andi %c0, %c1 : i1
    %b1 = arith.ori %b0, %c2 : i1
    %b2 = arith.xori %b1, %c3 : i1
    %b3 = arith.andi %b2, %c4 : i1
    %b4 = arith.ori %b3, %c5 : i1
    %b5 = arith.xori %b4, %c6 : i1
    %b6 = arith.andi %b5, %c7 : i1
    %b7 = arith.ori %b6, %c8 : i1
    %b8 = arith.xori %b7, %c9 : i1
    %b9 = arith.andi %b8, %c10 : i1
    %b10 = arith.ori %b9, %c11 : i1
    %b11 = arith.xori %b10, %c12 : i1
    %b12 = arith.andi %b11, %c13 : i1
    %b13 = arith.ori %b12, %c14 : i1
    %b14 = arith.xori %b13, %c15 : i1
    %b15 = arith.xori %b14, %t : i1
    %r = arith.select %b15, %18, %x : f32
    %rb = arith.truncf %r : f32 to bf16
    %sb = arith.select %b15, %rb, %hb : bf16
    kfuse.yield %r, %sb : f32, bf16
  }
  kfuse.write %0#0 to %p : tensor<?xf32>
  kfuse.write %0#1 to %q : tensor<?xbf16>
  return
}
)mlir";

TEST_F(CudaEmitterTest, EveryBodyOpCompiles) {
  FailureOr<KernelPlan> plan = emit(kAllOps);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  const std::string &source = plan->source;
  EXPECT_TRUE(contains(source, "__uint_as_float(0x7f800000u)")) << source;
  EXPECT_TRUE(contains(source, "(-2.5f)")) << source;
  EXPECT_TRUE(contains(source, "(unsigned short)0x3fc0u")) << source;
  EXPECT_TRUE(contains(source, "kfuse_rsqrt_rn(")) << source;
  // 8-byte alignment: f32 pairs move as 8 bytes, bf16 pairs as 4.
  EXPECT_TRUE(contains(source, "struct alignas(8) kfuse_f32x2 {")) << source;
  EXPECT_TRUE(contains(source, "struct alignas(4) kfuse_bf16x2 {")) << source;
  compileAll(*plan);
}

TEST_F(CudaEmitterTest, UnsupportedBodyOpIsDiagnosed) {
  FailureOr<KernelPlan> plan = emit(R"mlir(
func.func @bad(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %0 = kfuse.fused (%p) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%x: f32):
    %s = math.sin %x : f32
    kfuse.yield %s : f32
  }
  kfuse.write %0 to %p : tensor<8xf32>
  return
}
)mlir");
  EXPECT_TRUE(failed(plan));
  EXPECT_TRUE(contains(diagnostics, "'math.sin' op is not supported in a "
                                    "fused body by the CUDA code generator"))
      << diagnostics;
}

TEST_F(CudaEmitterTest, NonF32ComputeIsDiagnosed) {
  FailureOr<KernelPlan> plan = emit(R"mlir(
func.func @bad(%p: tensor<8xbf16> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %0 = kfuse.fused (%p) : (tensor<8xbf16>) -> tensor<8xbf16> {
  ^bb0(%x: bf16):
    %s = arith.addf %x, %x : bf16
    kfuse.yield %s : bf16
  }
  kfuse.write %0 to %p : tensor<8xbf16>
  return
}
)mlir");
  EXPECT_TRUE(failed(plan));
  EXPECT_TRUE(contains(diagnostics, "'arith.addf' op operand #0 has type "
                                    "'bf16'; generated code computes in f32"))
      << diagnostics;
}

TEST_F(CudaEmitterTest, UnfusedTopLevelOpIsDiagnosed) {
  FailureOr<KernelPlan> plan = emit(R"mlir(
func.func @bad(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>},
               %g: tensor<8xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  %0 = arith.subf %p, %g : tensor<8xf32>
  kfuse.write %0 to %p : tensor<8xf32>
  return
}
)mlir");
  EXPECT_TRUE(failed(plan));
  EXPECT_TRUE(contains(diagnostics, "'arith.subf' op outside kfuse.fused "
                                    "cannot be emitted as CUDA"))
      << diagnostics;
}

TEST_F(CudaEmitterTest, F64HyperIsDiagnosed) {
  FailureOr<KernelPlan> plan = emit(R"mlir(
func.func @bad(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>},
               %lr: f64 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr"})
    attributes {kfuse.update} {
  %0 = kfuse.fused (%p) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%x: f32):
    kfuse.yield %x : f32
  }
  kfuse.write %0 to %p : tensor<8xf32>
  return
}
)mlir");
  EXPECT_TRUE(failed(plan));
  EXPECT_TRUE(contains(diagnostics, "argument #1 'lr' of type 'f64' is not "
                                    "supported"))
      << diagnostics;
}

} // namespace

namespace {

/// Every library optimizer, fused and unfused, for mixed dtypes and static
/// or dynamic sizes, goes through the whole pipeline and NVRTC.
TEST(CudaEmitterLibraryTest, LibraryOptimizersCompile) {
  for (const char *name : {"sgd", "adam", "adamw", "lion"}) {
    std::string path =
        std::string(KFUSE_SOURCE_DIR) + "/library/optim/" + name + ".mlir";
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer)) << path;
    for (bool fuse : {true, false}) {
      for (int64_t numel : {int64_t(-1), int64_t(1003)}) {
        Specialization spec;
        spec.paramDType = DType::bf16;
        spec.gradDType = DType::bf16;
        spec.stateDType = DType::f32;
        spec.numel = numel;
        PipelineOptions options;
        options.fuse = fuse;
        llvm::Expected<KernelPlan> plan =
            compileToPlan((*buffer)->getBuffer(), path, spec, options);
        ASSERT_TRUE(bool(plan))
            << name << ": " << llvm::toString(plan.takeError());
        EXPECT_EQ(plan->kernels.size() == 1, fuse) << name;
        NvrtcOptions nvrtc;
        nvrtc.arch = "sm_90";
        llvm::Expected<NvrtcResult> compiled =
            compileWithNvrtc(plan->source, std::string(name) + ".cu", nvrtc);
        EXPECT_TRUE(bool(compiled))
            << name << ": " << llvm::toString(compiled.takeError());
      }
    }
  }
}

} // namespace
