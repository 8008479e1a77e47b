//===- MultiTensorEmitterTest.cpp - multi-tensor CUDA kernels -------------===//
//
// emitCuda on fused updates marked kfuse.multi_tensor (and kfuse.found_inf):
// the plan fields the runtime launches from, the table ABI in the source,
// the found-inf gate and the step advance, NVRTC compiles for sm_80 and
// sm_90 with vector memory instructions on the aligned path, and the
// diagnostics for updates a multi-tensor plan cannot run.
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

using namespace mlir;
using namespace kfuse;

namespace {

using namespace kfuse::testing;

class MultiTensorEmitterTest : public EmitterTest {};

/// The PTX of entry `name`: from its `.entry` to the next one.
std::string getEntryPtx(const std::string &ptx, const std::string &name) {
  size_t begin = ptx.find(".entry " + name + "(");
  if (begin == std::string::npos)
    return "";
  size_t end = ptx.find(".entry ", begin + 1);
  return ptx.substr(begin, end == std::string::npos ? end : end - begin);
}

/// Whether every tensor access of `ptx` is a global one: the table's
/// generic pointers must not become generic loads and stores.
bool hasGenericAccess(const std::string &ptx) {
  for (llvm::StringRef op : {"\tld.v", "\tst.v", "\tld.f32", "\tst.f32",
                             "\tld.u16", "\tst.u16", "\tld.b16", "\tst.b16"})
    if (contains(ptx, op))
      return true;
  return false;
}

KernelParam tensor(unsigned index, DType dtype, bool read, bool written) {
  return {KernelParam::Kind::Tensor, index, dtype, read, written};
}
KernelParam scalar(unsigned index) {
  return {KernelParam::Kind::Scalar, index, DType::f32, true, false};
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

// AdamW, f32 everywhere, as kfuse-specialize, kfuse-horizontal and
// kfuse-fuse-elementwise leave it.
constexpr llvm::StringLiteral kAdamWF32 = R"mlir(
func.func @adamw(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %exp_avg_sq: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg_sq"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.999 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 1.0e-2 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update, kfuse.multi_tensor, kfuse.vector_width = 4 : i64, kfuse.index_bits = 64 : i64, kfuse.alignment = 16 : i64} {
  %0:3 = kfuse.fused (%param, %grad, %exp_avg, %exp_avg_sq, %lr, %beta1, %beta2, %eps, %weight_decay, %step)
      : (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, f32, f32, f32, f32, f32, f32)
      -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  ^bb0(%p: f32, %g: f32, %m: f32, %v: f32, %lr_: f32, %b1: f32, %b2: f32, %e: f32, %wd: f32, %t: f32):
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
    %pd = arith.mulf %p, %decay : f32
    %m0 = arith.mulf %m, %b1 : f32
    %gs = arith.mulf %g, %omb1 : f32
    %mn = arith.addf %m0, %gs : f32
    %v0 = arith.mulf %v, %b2 : f32
    %g2 = arith.mulf %g, %g : f32
    %g2s = arith.mulf %g2, %omb2 : f32
    %vn = arith.addf %v0, %g2s : f32
    %vs = math.sqrt %vn : f32
    %vh = arith.divf %vs, %bc2_sqrt : f32
    %den = arith.addf %vh, %e : f32
    %ms = arith.mulf %step_size, %mn : f32
    %up = arith.divf %ms, %den : f32
    %pn = arith.subf %pd, %up : f32
    kfuse.yield %pn, %mn, %vn : f32, f32, f32
  }
  kfuse.write %0#0 to %param : tensor<?xf32>
  kfuse.write %0#1 to %exp_avg : tensor<?xf32>
  kfuse.write %0#2 to %exp_avg_sq : tensor<?xf32>
  return
}
)mlir";

TEST_F(MultiTensorEmitterTest, AdamWF32) {
  FailureOr<KernelPlan> plan = emit(kAdamWF32);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  EXPECT_TRUE(plan->multiTensor);
  EXPECT_FALSE(plan->checksFoundInf);
  EXPECT_EQ(plan->numel, -1);
  EXPECT_TRUE(plan->temporaries.empty());
  EXPECT_EQ(plan->tensorArgs, (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(plan->stepArg, 9);
  ASSERT_EQ(plan->kernels.size(), 1u);
  const KernelInfo &kernel = plan->kernels[0];
  EXPECT_EQ(kernel.role, KernelInfo::Role::Update);
  EXPECT_EQ(kernel.name, "kfuse_adamw_multi");
  EXPECT_EQ(kernel.vectorWidth, 4u);
  EXPECT_EQ(kernel.indexBits, 64u);
  EXPECT_EQ(kernel.blockSize, 256u);
  std::vector<KernelParam> expected = {
      tensor(0, DType::f32, true, true), tensor(1, DType::f32, true, false),
      tensor(2, DType::f32, true, true), tensor(3, DType::f32, true, true)};
  for (unsigned i = 4; i < 10; ++i)
    expected.push_back(scalar(i));
  expectParams(kernel, expected);
  EXPECT_EQ(plan->bytesPerElement(), 4u * (2 + 1 + 2 + 2));

  const std::string &source = plan->source;
  EXPECT_FALSE(contains(source, "#include"));
  EXPECT_TRUE(contains(source, "struct alignas(16) kfuse_entry {\n"
                               "  unsigned long long pointers[8];\n"
                               "  long long numel;\n"
                               "  int aligned;\n"
                               "  int first_chunk;\n"
                               "  long long cols;\n"
                               "  long long row_base;\n"
                               "  long long col_partial_base;\n"
                               "  long long reserved;\n"
                               "};"))
      << source;
  EXPECT_TRUE(contains(source, "static_assert(sizeof(kfuse_entry) == 112"));
  EXPECT_TRUE(contains(source, "struct kfuse_chunk {\n"
                               "  int entry;\n"
                               "  int reserved;\n"
                               "  long long begin;\n"
                               "  long long end;\n"
                               "};"))
      << source;
  EXPECT_TRUE(contains(source, "static_assert(sizeof(kfuse_chunk) == 24"));
  EXPECT_TRUE(contains(source,
                       "kfuse_adamw_multi(const kfuse_entry *__restrict__ "
                       "entries,\n    const kfuse_chunk *__restrict__ chunks, "
                       "long long num_chunks,\n    double *hypers, "
                       "float *found_inf,\n    unsigned int *done_counter) {"))
      << source;
  EXPECT_FALSE(contains(source, "long long n)")) << source;
  EXPECT_FALSE(contains(source, "long long n,")) << source;

  // The gate comes first, then the hypers from the device.
  size_t gate =
      source.find("if (found_inf != nullptr && __ldcg(found_inf) != 0.0f)\n"
                  "    return;");
  size_t lr = source.find("const double lr = hypers[4];");
  size_t step = source.find("const double step = hypers[9] + 1.0;");
  size_t loop = source.find(
      "for (long long c = blockIdx.x; c < num_chunks; c += gridDim.x) {");
  ASSERT_NE(gate, std::string::npos) << source;
  ASSERT_NE(lr, std::string::npos) << source;
  ASSERT_NE(step, std::string::npos) << source;
  ASSERT_NE(loop, std::string::npos) << source;
  EXPECT_LT(gate, lr);
  EXPECT_LT(step, loop);
  EXPECT_LT(source.find("kfuse_pow_f64(beta1, step)"), loop) << source;
  EXPECT_TRUE(contains(source, "const kfuse_chunk chunk = chunks[c];"));
  EXPECT_TRUE(contains(source, "const kfuse_entry *entry = entries + "
                               "chunk.entry;"));
  EXPECT_TRUE(contains(source, "reinterpret_cast<const float *>("
                               "entry->pointers[1]);"))
      << source;
  EXPECT_TRUE(contains(source, "reinterpret_cast<float *>("
                               "entry->pointers[3]);"))
      << source;
  EXPECT_TRUE(contains(source, "if (entry->aligned) {")) << source;
  EXPECT_TRUE(contains(source, "for (long long i = chunk.begin / 4 + "
                               "threadIdx.x; i < vector_end;"))
      << source;
  EXPECT_TRUE(contains(source, "for (long long i = vector_end * 4 + "
                               "threadIdx.x; i < chunk.end;"))
      << source;
  EXPECT_TRUE(contains(source, "for (long long i = chunk.begin + "
                               "threadIdx.x; i < chunk.end;"))
      << source;
  // The last block advances the step and resets the counter.
  EXPECT_TRUE(contains(source, "  __syncthreads();\n"
                               "  if (threadIdx.x == 0) {\n"
                               "    __threadfence();\n"
                               "    const unsigned int prev = "
                               "atomicAdd(done_counter, 1u);\n"
                               "    if (prev == gridDim.x - 1) {\n"
                               "      hypers[9] = hypers[9] + 1.0;\n"
                               "      *done_counter = 0;\n"
                               "      __threadfence();\n"
                               "    }\n"
                               "  }\n"
                               "}\n"))
      << source;

  std::string ptx = compileAll(*plan);
  EXPECT_TRUE(hasVectorLoad(ptx)) << ptx;
  EXPECT_TRUE(contains(ptx, "st.global.v4")) << ptx;
  EXPECT_FALSE(hasGenericAccess(ptx)) << ptx;
  EXPECT_TRUE(contains(ptx, "atom.global.add.u32")) << ptx;
}

// AdamW for bf16 params and grads and f32 states with GradScaler semantics:
// an inv_scale hyper multiplies the grad, and a scan gates the update.
constexpr llvm::StringLiteral kAdamWBf16FoundInf = R"mlir(
func.func @adamw(
    %param: tensor<?xbf16> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xbf16> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %exp_avg_sq: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg_sq"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.999 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 1.0e-2 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32},
    %inv_scale: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "inv_scale", kfuse.default = 1.0 : f32})
    attributes {kfuse.update, kfuse.multi_tensor, kfuse.found_inf, kfuse.vector_width = 8 : i64, kfuse.index_bits = 64 : i64, kfuse.alignment = 16 : i64} {
  %0:3 = kfuse.fused (%param, %grad, %exp_avg, %exp_avg_sq, %lr, %beta1, %beta2, %eps, %weight_decay, %step, %inv_scale)
      : (tensor<?xbf16>, tensor<?xbf16>, tensor<?xf32>, tensor<?xf32>, f32, f32, f32, f32, f32, f32, f32)
      -> (tensor<?xbf16>, tensor<?xf32>, tensor<?xf32>) {
  ^bb0(%p: bf16, %graw: bf16, %m: f32, %v: f32, %lr_: f32, %b1: f32, %b2: f32, %e: f32, %wd: f32, %t: f32, %is: f32):
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
    %graw_c = kfuse.convert %graw : bf16 to f32
    %gc = arith.mulf %graw_c, %is : f32
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
  kfuse.write %0#0 to %param : tensor<?xbf16>
  kfuse.write %0#1 to %exp_avg : tensor<?xf32>
  kfuse.write %0#2 to %exp_avg_sq : tensor<?xf32>
  return
}
)mlir";

TEST_F(MultiTensorEmitterTest, AdamWBf16WithFoundInfScan) {
  FailureOr<KernelPlan> plan = emit(kAdamWBf16FoundInf);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  EXPECT_TRUE(plan->multiTensor);
  EXPECT_TRUE(plan->checksFoundInf);
  EXPECT_EQ(plan->tensorArgs, (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(plan->stepArg, 9);
  ASSERT_EQ(plan->kernels.size(), 2u);
  const KernelInfo &scan = plan->kernels[0];
  const KernelInfo &update = plan->kernels[1];
  EXPECT_EQ(scan.role, KernelInfo::Role::FoundInfScan);
  EXPECT_EQ(scan.name, "kfuse_adamw_found_inf");
  EXPECT_EQ(scan.vectorWidth, 8u);
  expectParams(scan, {tensor(1, DType::bf16, true, false)});
  EXPECT_EQ(update.role, KernelInfo::Role::Update);
  EXPECT_EQ(update.name, "kfuse_adamw_multi");
  std::vector<KernelParam> expected = {
      tensor(0, DType::bf16, true, true), tensor(1, DType::bf16, true, false),
      tensor(2, DType::f32, true, true), tensor(3, DType::f32, true, true)};
  for (unsigned i = 4; i < 11; ++i)
    expected.push_back(scalar(i));
  expectParams(update, expected);
  // The update's traffic plus the scan's second read of the bf16 grad.
  EXPECT_EQ(plan->bytesPerElement(), (2u * 2 + 2 + 4 * 2 * 2) + 2);

  const std::string &source = plan->source;
  EXPECT_TRUE(contains(source, "kfuse_adamw_found_inf(const kfuse_entry "
                               "*__restrict__ entries,\n    const kfuse_chunk "
                               "*__restrict__ chunks, long long num_chunks,\n"
                               "    const double *hypers, float *found_inf) {"))
      << source;
  // The scan is the first kernel of the source, reads only the grad, and
  // tests bf16 exponent bits.
  size_t scanStart = source.find("\nkfuse_adamw_found_inf(");
  size_t updateStart = source.find("\nkfuse_adamw_multi(");
  ASSERT_NE(scanStart, std::string::npos);
  ASSERT_NE(updateStart, std::string::npos);
  EXPECT_LT(scanStart, updateStart);
  std::string scanSource = source.substr(scanStart, updateStart - scanStart);
  EXPECT_TRUE(contains(scanSource, "entry->pointers[1]")) << scanSource;
  EXPECT_FALSE(contains(scanSource, "entry->pointers[0]")) << scanSource;
  EXPECT_FALSE(contains(scanSource, "entry->pointers[2]")) << scanSource;
  EXPECT_TRUE(contains(scanSource, "finite &= kfuse_finite_bf16(grad_v.v[j]);"))
      << scanSource;
  EXPECT_TRUE(contains(scanSource, "*found_inf = 1.0f;")) << scanSource;
  EXPECT_TRUE(contains(source, "(x & 0x7f80u) != 0x7f80u")) << source;
  EXPECT_TRUE(contains(source, "const double inv_scale = hypers[10];"))
      << source;
  EXPECT_TRUE(contains(source, "const double step = hypers[9] + 1.0;"))
      << source;
  EXPECT_TRUE(contains(source, "hypers[9] = hypers[9] + 1.0;")) << source;
  EXPECT_TRUE(contains(source, "for (long long i = chunk.begin / 8 + "
                               "threadIdx.x; i < vector_end;"))
      << source;

  std::string ptx = compileAll(*plan);
  std::string scanPtx = getEntryPtx(ptx, "kfuse_adamw_found_inf");
  std::string updatePtx = getEntryPtx(ptx, "kfuse_adamw_multi");
  ASSERT_FALSE(scanPtx.empty()) << ptx;
  ASSERT_FALSE(updatePtx.empty()) << ptx;
  EXPECT_TRUE(hasVectorLoad(scanPtx)) << scanPtx;
  EXPECT_FALSE(contains(scanPtx, "st.global.v")) << scanPtx;
  EXPECT_TRUE(hasVectorLoad(updatePtx)) << updatePtx;
  EXPECT_TRUE(contains(updatePtx, "st.global.v4")) << updatePtx;
  EXPECT_FALSE(hasGenericAccess(ptx)) << ptx;
}

// Plain SGD with no step hyper and scalar access only: no counter, no
// aligned branch.
constexpr llvm::StringLiteral kSgdNoStep = R"mlir(
func.func @sgd(%p: tensor<?xf16> {kfuse.role = #kfuse.role<param>, kfuse.name = "entry"},
               %g: tensor<?xf16> {kfuse.role = #kfuse.role<grad>, kfuse.name = "g"},
               %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr"})
    attributes {kfuse.update, kfuse.multi_tensor, kfuse.vector_width = 1 : i64, kfuse.index_bits = 64 : i64, kfuse.alignment = 2 : i64} {
  %0 = kfuse.fused (%p, %g, %lr) : (tensor<?xf16>, tensor<?xf16>, f32) -> tensor<?xf16> {
  ^bb0(%pe: f16, %ge: f16, %l: f32):
    %pc = kfuse.convert %pe : f16 to f32
    %gc = kfuse.convert %ge : f16 to f32
    %d = arith.mulf %l, %gc : f32
    %n = arith.subf %pc, %d : f32
    %nh = kfuse.convert %n : f32 to f16
    kfuse.yield %nh : f16
  }
  kfuse.write %0 to %p : tensor<?xf16>
  return
}
)mlir";

TEST_F(MultiTensorEmitterTest, NoStepScalarOnly) {
  FailureOr<KernelPlan> plan = emit(kSgdNoStep);
  ASSERT_TRUE(succeeded(plan)) << diagnostics;
  EXPECT_TRUE(plan->multiTensor);
  EXPECT_EQ(plan->stepArg, -1);
  EXPECT_EQ(plan->tensorArgs, (std::vector<unsigned>{0, 1}));
  ASSERT_EQ(plan->kernels.size(), 1u);
  expectParams(plan->kernels[0],
               {tensor(0, DType::f16, true, true),
                tensor(1, DType::f16, true, false), scalar(2)});
  const std::string &source = plan->source;
  EXPECT_FALSE(contains(source, "atomicAdd")) << source;
  EXPECT_FALSE(contains(source, "entry->aligned")) << source;
  EXPECT_TRUE(contains(source, "const double lr = hypers[2];")) << source;
  // The user's name `entry` stays clear of the table walk's names.
  EXPECT_TRUE(contains(source, "unsigned short *__restrict__ entry_ =\n"))
      << source;
  std::string ptx = compileAll(*plan);
  EXPECT_FALSE(contains(ptx, ".v4.")) << ptx;
  EXPECT_FALSE(hasGenericAccess(ptx)) << ptx;
}

TEST_F(MultiTensorEmitterTest, TwoFusedRegionsAreDiagnosed) {
  FailureOr<KernelPlan> plan = emit(R"mlir(
func.func @two(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
               %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update, kfuse.multi_tensor} {
  %0 = kfuse.fused (%g) : (tensor<?xf32>) -> tensor<?xf32> {
  ^bb0(%ge: f32):
    %d = arith.mulf %ge, %ge : f32
    kfuse.yield %d : f32
  }
  %1 = kfuse.fused (%p, %0) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32> {
  ^bb0(%pe: f32, %de: f32):
    %n = arith.subf %pe, %de : f32
    kfuse.yield %n : f32
  }
  kfuse.write %1 to %p : tensor<?xf32>
  return
}
)mlir");
  EXPECT_TRUE(failed(plan));
  EXPECT_TRUE(contains(diagnostics,
                       "'func.func' op multi-tensor updates need exactly one "
                       "fused region per reduction phase; got 2 regions and 0 "
                       "reductions"))
      << diagnostics;
}

TEST_F(MultiTensorEmitterTest, StaticShapeIsDiagnosed) {
  FailureOr<KernelPlan> plan = emit(R"mlir(
func.func @fixed(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"})
    attributes {kfuse.update, kfuse.multi_tensor} {
  %0 = kfuse.fused (%p) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%x: f32):
    kfuse.yield %x : f32
  }
  kfuse.write %0 to %p : tensor<8xf32>
  return
}
)mlir");
  EXPECT_TRUE(failed(plan));
  EXPECT_TRUE(contains(diagnostics, "argument #0 'p' has the static shape "
                                    "'tensor<8xf32>'; multi-tensor updates "
                                    "need dynamic shapes"))
      << diagnostics;
}

TEST_F(MultiTensorEmitterTest, FoundInfWithoutMultiTensorIsDiagnosed) {
  FailureOr<KernelPlan> plan = emit(R"mlir(
func.func @single(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                  %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                  %s: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "inv_scale"})
    attributes {kfuse.update, kfuse.found_inf} {
  %0 = kfuse.fused (%p, %g, %s) : (tensor<?xf32>, tensor<?xf32>, f32) -> tensor<?xf32> {
  ^bb0(%pe: f32, %ge: f32, %se: f32):
    %d = arith.mulf %ge, %se : f32
    %n = arith.subf %pe, %d : f32
    kfuse.yield %n : f32
  }
  kfuse.write %0 to %p : tensor<?xf32>
  return
}
)mlir");
  EXPECT_TRUE(failed(plan));
  EXPECT_TRUE(contains(diagnostics, "'kfuse.found_inf' needs "
                                    "'kfuse.multi_tensor'"))
      << diagnostics;
}

} // namespace

namespace {

/// Every library optimizer through the whole pipeline as a multi-tensor
/// plan with grad scaling, for f32 and for bf16 params and grads, and NVRTC.
TEST(MultiTensorLibraryTest, LibraryOptimizersCompile) {
  for (const char *name : {"sgd", "adam", "adamw", "lion"}) {
    std::string path =
        std::string(KFUSE_SOURCE_DIR) + "/library/optim/" + name + ".mlir";
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer)) << path;
    for (DType dtype : {DType::f32, DType::bf16}) {
      Specialization spec;
      spec.paramDType = dtype;
      spec.gradDType = dtype;
      spec.stateDType = DType::f32;
      PipelineOptions options;
      options.multiTensor = true;
      options.gradScaling = true;
      llvm::Expected<KernelPlan> plan =
          compileToPlan((*buffer)->getBuffer(), path, spec, options);
      ASSERT_TRUE(bool(plan))
          << name << ": " << llvm::toString(plan.takeError());
      EXPECT_TRUE(plan->multiTensor) << name;
      EXPECT_TRUE(plan->checksFoundInf) << name;
      ASSERT_EQ(plan->kernels.size(), 2u) << name;
      EXPECT_EQ(plan->kernels[0].role, KernelInfo::Role::FoundInfScan);
      EXPECT_EQ(plan->kernels[1].role, KernelInfo::Role::Update);
      std::string ptx =
          compileSource(plan->source, name, "sm_90", /*ptxOnly=*/true);
      EXPECT_TRUE(hasVectorLoad(ptx)) << name;
      EXPECT_FALSE(hasGenericAccess(ptx)) << name;
    }
  }
}

} // namespace

using Access = std::vector<std::tuple<unsigned, bool, bool>>;

/// The tensor accesses of `params` (all of them, or [begin, end)), sorted.
static Access tensorAccesses(llvm::ArrayRef<KernelParam> params) {
  Access out;
  for (const KernelParam &param : params)
    if (param.kind == KernelParam::Kind::Tensor)
      out.emplace_back(param.index, param.read, param.written);
  llvm::sort(out);
  return out;
}

static llvm::Expected<KernelPlan>
compileLibrary(llvm::StringRef name, const PipelineOptions &options) {
  std::string path =
      std::string(KFUSE_SOURCE_DIR) + "/library/optim/" + name.str() + ".mlir";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError("cannot read " + path);
  return compileToPlan((*buffer)->getBuffer(), path, Specialization(), options,
                       /*ptxSm=*/0);
}

/// LAMB's per-tensor norms make two reduction phases after the found-inf
/// scan: the first reads param, grad and both moments and stores the
/// moments; the second reads the moments back with the param and stores
/// the param. 44 bytes per element: the fewest a two-pass LAMB moves, plus
/// the scan's read of the grad. Only the last phase advances the step.
TEST_F(MultiTensorEmitterTest, LambRunsInTwoPhases) {
  PipelineOptions options;
  options.gradScaling = true; // implies the multi-tensor schedule it needs
  options.gridBarrier = false;
  llvm::Expected<KernelPlan> plan = compileLibrary("lamb", options);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_TRUE(plan->multiTensor);
  EXPECT_EQ(plan->numReductions, 2u);
  ASSERT_EQ(plan->kernels.size(), 3u);
  EXPECT_EQ(plan->kernels[0].role, KernelInfo::Role::FoundInfScan);
  EXPECT_EQ(plan->kernels[1].name, "kfuse_lamb_phase0");
  EXPECT_EQ(plan->kernels[2].name, "kfuse_lamb_phase1");
  auto tensors = [](const KernelInfo &kernel) {
    return tensorAccesses(kernel.params);
  };
  EXPECT_EQ(tensors(plan->kernels[1]), (Access{{0, true, false},
                                               {1, true, false},
                                               {2, true, true},
                                               {3, true, true}}));
  EXPECT_EQ(tensors(plan->kernels[2]),
            (Access{{0, true, true}, {2, true, false}, {3, true, false}}));
  EXPECT_EQ(plan->bytesPerElement(), 4u * (1 + 6 + 4));
  std::string_view source = plan->source;
  size_t phase1 = source.find("kfuse_lamb_phase1(");
  ASSERT_NE(phase1, std::string_view::npos);
  EXPECT_EQ(source.substr(0, phase1).find("atomicAdd(done_counter"),
            std::string_view::npos);
  EXPECT_NE(source.substr(phase1).find("atomicAdd(done_counter"),
            std::string_view::npos);
}

/// By default the two phases are one kernel with a grid barrier between
/// them: the same accesses and bytes, one launch after the scan.
TEST_F(MultiTensorEmitterTest, LambPhasesShareOneLaunch) {
  PipelineOptions options;
  options.gradScaling = true;
  llvm::Expected<KernelPlan> plan = compileLibrary("lamb", options);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_EQ(plan->kernels.size(), 2u);
  EXPECT_EQ(plan->kernels[0].role, KernelInfo::Role::FoundInfScan);
  const KernelInfo &kernel = plan->kernels[1];
  EXPECT_EQ(kernel.name, "kfuse_lamb_phases");
  EXPECT_EQ(kernel.phases, 2u);
  EXPECT_FALSE(kernel.setsFoundInf);
  EXPECT_EQ(plan->bytesPerElement(), 4u * (1 + 6 + 4));
  std::string_view source = plan->source;
  size_t phases = source.find("kfuse_lamb_phases(");
  ASSERT_NE(phases, std::string_view::npos);
  EXPECT_NE(source.substr(phases).find("kfuse_lamb_phase0(entries"),
            std::string_view::npos);
  EXPECT_NE(source.substr(phases).find("kfuse_grid_barrier(barrier);"),
            std::string_view::npos);
}

/// With clipping, LAMB's own rule reads its `global_grad_norm` hyper, which
/// kfuse-clip-grad-norm makes the norm reduced in the plan: three phases
/// (norm, moments, param) in one launch. Under grad scaling the norm phase,
/// which reads only the grads, does the found-inf scan: a whole step moves
/// 44 bytes per element, the grads read twice. The scan kernel stays, first,
/// for a step in parts (several plans sharing one flag).
TEST_F(MultiTensorEmitterTest, LambClipsInOneLaunch) {
  PipelineOptions options;
  options.gradScaling = true;
  options.clipGradNorm = true;
  llvm::Expected<KernelPlan> plan = compileLibrary("lamb", options);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->numReductions, 3u);
  ASSERT_EQ(plan->listTotals.size(), 1u);
  EXPECT_EQ(plan->listTotals[0].first, "grad_norm_sq");
  // No max_grad_norm added: LAMB has its own.
  EXPECT_EQ(llvm::count_if(
                plan->args,
                [](const ArgInfo &arg) { return arg.name == "max_grad_norm"; }),
            1);
  ASSERT_EQ(plan->kernels.size(), 2u);
  EXPECT_EQ(plan->kernels[0].role, KernelInfo::Role::FoundInfScan);
  const KernelInfo &kernel = plan->kernels[1];
  EXPECT_EQ(kernel.role, KernelInfo::Role::Update);
  EXPECT_EQ(kernel.phases, 3u);
  EXPECT_TRUE(kernel.setsFoundInf);
  EXPECT_EQ(plan->bytesPerElement(), 4u * (1 + 6 + 4));
  EXPECT_NE(plan->source.find("kfuse_nonfinite |= !kfuse_finite_f32("),
            std::string::npos);

  options.gridBarrier = false;
  plan = compileLibrary("lamb", options);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_EQ(plan->kernels.size(), 4u);
  EXPECT_EQ(plan->kernels[0].role, KernelInfo::Role::FoundInfScan);
  EXPECT_TRUE(plan->kernels[1].setsFoundInf);
  EXPECT_EQ(tensorAccesses(plan->kernels[1].params),
            (Access{{1, true, false}}));
  EXPECT_FALSE(plan->kernels[2].setsFoundInf);
}

/// AdamW with max_grad_norm and a GradScaler: the norm phase scans the
/// grads, so a step moves 32 bytes per element in one launch.
TEST_F(MultiTensorEmitterTest, ClippedAdamWScansInItsNormPhase) {
  PipelineOptions options;
  options.gradScaling = true;
  options.clipGradNorm = true;
  llvm::Expected<KernelPlan> plan = compileLibrary("adamw", options);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_EQ(plan->kernels.size(), 2u);
  EXPECT_EQ(plan->kernels[0].role, KernelInfo::Role::FoundInfScan);
  EXPECT_EQ(plan->kernels[1].phases, 2u);
  EXPECT_TRUE(plan->kernels[1].setsFoundInf);
  EXPECT_EQ(plan->bytesPerElement(), 4u * (1 + 4 + 3));
}

/// With the norm from the caller (several plans, one norm), a clipped
/// AdamW is AdamW's one pass with two more hypers: 28 bytes per element.
TEST_F(MultiTensorEmitterTest, ExternalNormClipsWithoutReducing) {
  PipelineOptions options;
  options.clipGradNorm = true;
  options.clipNormExternal = true;
  llvm::Expected<KernelPlan> plan = compileLibrary("adamw", options);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->numReductions, 0u);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].phases, 1u);
  EXPECT_EQ(plan->bytesPerElement(), 4u * (4 + 3));
  ASSERT_GE(plan->args.size(), 2u);
  EXPECT_EQ(plan->args[plan->args.size() - 2].name, "max_grad_norm");
  EXPECT_EQ(plan->args.back().name, "global_grad_norm");
  EXPECT_EQ(plan->args.back().defaultValue, 0.0);

  // LAMB takes the norm as its own hyper already: nothing is added.
  plan = compileLibrary("lamb", options);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->numReductions, 2u);
  EXPECT_EQ(llvm::count_if(plan->args,
                           [](const ArgInfo &arg) {
                             return arg.name == "global_grad_norm";
                           }),
            1);
}
