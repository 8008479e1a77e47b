// RUN: kfuse compile %s --emit=cuda --no-fusion --numel=1002 | FileCheck %s

// Unfused, each elementwise op is a kernel; results that later kernels read
// live in temporaries (i1 ones as one byte each), the write goes to the
// param's pointer, and 1002 elements leave a tail of 2.

// CHECK: struct alignas(16) kfuse_f32x4 {
// CHECK: struct alignas(4) kfuse_predx4 {
// CHECK-NEXT:   unsigned char v[4];

// CHECK: kfuse_clipped_0(const float *__restrict__ grad, float *__restrict__ tmp0)
// CHECK: kfuse_clipped_1_element(const kfuse_clipped_1_uniforms &u, float tmp0_in, unsigned char &tmp1_out)
// CHECK: kfuse_clipped_1(const float *__restrict__ tmp0, unsigned char *__restrict__ tmp1)
// CHECK: kfuse_clipped_2_element(const kfuse_clipped_2_uniforms &u, bool tmp1_in, float grad_in, float &tmp2_out)
// CHECK: kfuse_clipped_2(const unsigned char *__restrict__ tmp1, const float *__restrict__ grad, float *__restrict__ tmp2)
// CHECK: const kfuse_predx4 tmp1_v = reinterpret_cast<const kfuse_predx4 *>(tmp1)[i];
// CHECK: // The last count % 4 elements.
// CHECK: kfuse_clipped_3(float *__restrict__ param, const float *__restrict__ tmp2)
// CHECK-NOT: kfuse_clipped_4(

func.func @clipped(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %zero_v = kfuse.broadcast %zero like %param : f32, tensor<?xf32>
  %g2 = arith.mulf %grad, %grad : tensor<?xf32>
  %big = arith.cmpf ogt, %g2, %zero_v : tensor<?xf32>
  %step = arith.select %big, %grad, %zero_v : tensor<?xi1>, tensor<?xf32>
  %p_new = arith.subf %param, %step : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  return
}
