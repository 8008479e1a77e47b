// RUN: kfuse compile %s --emit=cuda --param-dtype=bf16 | FileCheck %s
// RUN: kfuse compile %s --emit=cuda --param-dtype=f16 --numel=1000 | FileCheck %s --check-prefix=F16

// bf16 params and grads with f32 states, of a dynamic size: bf16 travels as
// its bits in unsigned short, 8 to a 16-byte vector, and converts to f32
// for compute; the kernel takes `n` last and ends with a tail loop.

// CHECK-NOT: #include
// CHECK: struct alignas(16) kfuse_bf16x8 {
// CHECK-NEXT:   unsigned short v[8];
// CHECK-NEXT: };
// CHECK-NEXT: struct alignas(16) kfuse_f32x8 {
// CHECK-NEXT:   float v[8];
// CHECK-NEXT: };

// CHECK: kfuse_momentum_0_element(const kfuse_momentum_0_uniforms &u, unsigned short param_in, unsigned short grad_in, float buf_in, unsigned short &param_out, float &buf_out) {
// CHECK-DAG: = kfuse_bf16_to_f32(param_in);
// CHECK-DAG: = kfuse_bf16_to_f32(grad_in);
// CHECK: const unsigned short [[NEWP:v[0-9]+]] = kfuse_f32_to_bf16(v{{[0-9]+}});
// CHECK: param_out = [[NEWP]];

// CHECK: extern "C" __global__ void __launch_bounds__(256)
// CHECK-NEXT: kfuse_momentum_0(const kfuse_momentum_0_uniforms u, unsigned short *__restrict__ param, const unsigned short *__restrict__ grad, float *__restrict__ buf, long long n) {
// CHECK: const unsigned long long count = (unsigned long long)n;
// CHECK: const unsigned long long vectors = count / 8ull;
// CHECK: const kfuse_bf16x8 grad_v = reinterpret_cast<const kfuse_bf16x8 *>(grad)[i];
// CHECK: reinterpret_cast<kfuse_f32x8 *>(buf)[i] = buf_w;
// CHECK: // The last count % 8 elements.
// CHECK-NEXT: for (unsigned long long i = vectors * 8ull + tid; i < count; i += stride) {
// CHECK-NEXT: unsigned short param_o;
// CHECK-NEXT: float buf_o;
// CHECK-NEXT: kfuse_momentum_0_element(u, param[i], grad[i], buf[i], param_o, buf_o);
// CHECK-NEXT: param[i] = param_o;
// CHECK-NEXT: buf[i] = buf_o;
// CHECK-NEXT: }

// f16 through PTX conversions; 1000 elements: 125 vectors, no tail.
// F16: asm("cvt.f32.f16 %0, %1;"
// F16: asm("cvt.rn.f16.f32 %0, %1;"
// F16: = kfuse_f16_to_f32(param_in);
// F16: = kfuse_f32_to_f16(
// F16: kfuse_momentum_0(const kfuse_momentum_0_uniforms u, unsigned short *__restrict__ param, const unsigned short *__restrict__ grad, float *__restrict__ buf) {
// F16: const unsigned int count = 1000u;
// F16-NOT: count %

func.func @momentum(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %buf: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "buf"},
    %momentum: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "momentum", kfuse.default = 0.9 : f32},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32})
    attributes {kfuse.update} {
  %momentum_v = kfuse.broadcast %momentum like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %b0 = arith.mulf %buf, %momentum_v : tensor<?xf32>
  %b1 = arith.addf %b0, %grad : tensor<?xf32>
  %step = arith.mulf %lr_v, %b1 : tensor<?xf32>
  %p_new = arith.subf %param, %step : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %b1 to %buf : tensor<?xf32>
  return
}
