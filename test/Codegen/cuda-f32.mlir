// RUN: kfuse compile %s --emit=cuda --numel=1024 | FileCheck %s

// An f32 update of a static size: 16-byte vectors of 4 floats, 32-bit
// indexing, no tail, scalar math hoisted out of the element loop, and a
// source that needs no headers.

// CHECK-NOT: #include
// CHECK: static __device__ __forceinline__ float kfuse_bf16_to_f32(
// CHECK: struct alignas(16) kfuse_f32x4 {
// CHECK-NEXT:   float v[4];
// CHECK-NEXT: };

// CHECK-LABEL: // Kernel 0 of @decayed_sgd, from {{.*}}cuda-f32.mlir:{{[0-9]+}}:{{[0-9]+}}
// CHECK-NEXT: // Uniform values, computed on the host at each launch:
// CHECK-NEXT: //  const double [[LRWD:v[0-9]+]] = lr * wd;
// CHECK-NEXT: //  const double [[DECAY:v[0-9]+]] = 1.0f - [[LRWD]];
// CHECK-NEXT: struct kfuse_decayed_sgd_0_uniforms {
// CHECK-DAG:   float lr;
// CHECK-DAG:   float [[DECAY]];
// CHECK: };

// The element function computes only what varies per element.
// CHECK: static __device__ __forceinline__ void
// CHECK-NEXT: kfuse_decayed_sgd_0_element(const kfuse_decayed_sgd_0_uniforms &u, float param_in, float grad_in, float &param_out) {
// CHECK-NOT: wd
// CHECK: = param_in * u.[[DECAY]];
// CHECK: param_out = v{{[0-9]+}};
// CHECK-NEXT: }

// One pointer for the param, read and written; the grad is read-only.
// CHECK: extern "C" __global__ void __launch_bounds__(256)
// CHECK-NEXT: kfuse_decayed_sgd_0(const kfuse_decayed_sgd_0_uniforms u, float *__restrict__ param, const float *__restrict__ grad) {
// CHECK-NOT: double
// CHECK: const unsigned int count = 1024u;
// CHECK: const unsigned int vectors = count / 4u;
// CHECK: for (unsigned int i = tid; i < vectors; i += stride) {
// CHECK-NEXT: const kfuse_f32x4 param_v = reinterpret_cast<const kfuse_f32x4 *>(param)[i];
// CHECK-NEXT: const kfuse_f32x4 grad_v = reinterpret_cast<const kfuse_f32x4 *>(grad)[i];
// CHECK-NEXT: kfuse_f32x4 param_w;
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int j = 0; j < 4; ++j)
// CHECK-NEXT: kfuse_decayed_sgd_0_element(u, param_v.v[j], grad_v.v[j], param_w.v[j]);
// CHECK-NEXT: reinterpret_cast<kfuse_f32x4 *>(param)[i] = param_w;
// CHECK-NEXT: }
// 1024 is a multiple of 4: no tail loop.
// CHECK-NOT: count %
// CHECK: }

func.func @decayed_sgd(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %wd: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "wd", kfuse.default = 0.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %lr_wd = arith.mulf %lr, %wd : f32
  %decay = arith.subf %one, %lr_wd : f32
  %decay_v = kfuse.broadcast %decay like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %p_decayed = arith.mulf %param, %decay_v : tensor<?xf32>
  %step = arith.mulf %lr_v, %grad : tensor<?xf32>
  %p_new = arith.subf %p_decayed, %step : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  return
}
