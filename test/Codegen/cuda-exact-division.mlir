// RUN: kfuse compile %s --emit=cuda | FileCheck %s
// RUN: kfuse compile %s --emit=cuda --numel-multiple=8 | FileCheck %s --check-prefix=MULTIPLE
// RUN: kfuse compile %s --emit=cuda --numel-multiple=2 | FileCheck %s --check-prefix=TAIL
// RUN: kfuse compile %s --emit=ptx --arch=sm_90 | FileCheck %s --check-prefix=PTX-F64
// RUN: kfuse compile %s --emit=ptx --arch=sm_89 | FileCheck %s --check-prefix=PTX-F32

// f32 division, square root and rsqrt in an element body go through the
// prelude's correctly rounded helpers, defined once there.
// CHECK: static __device__ __forceinline__ float kfuse_div_rn(float a, float b) {
// CHECK: static __device__ __forceinline__ float kfuse_sqrt_rn(float a) {
// CHECK: static __device__ __forceinline__ float kfuse_rsqrt_rn(float a) {
// CHECK-LABEL: kfuse_roots_0_element(
// CHECK: = kfuse_sqrt_rn(arg1_in);
// CHECK: = kfuse_div_rn(arg0_in, v{{[0-9]+}});
// CHECK: = kfuse_rsqrt_rn(v{{[0-9]+}});
// A dynamic count of unknown divisibility keeps the scalar tail loop.
// CHECK: // The last count % 4 elements.

// A count that is a multiple of 8 leaves nothing for a tail; a multiple of 2
// does not cover the vector width of 4.
// MULTIPLE: vector width 4, 64-bit indexing, dynamic numel, a multiple of 8.
// MULTIPLE-NOT: The last count
// TAIL: dynamic numel, a multiple of 2.
// TAIL: // The last count % 4 elements.

// sm_90 runs f64 at full rate: reciprocal and root approximations in f64,
// refined, no IEEE f32 division or root left for ptxas to expand. sm_89's
// f64 is slow: the operators.
// PTX-F64: rcp.approx.ftz.f64
// PTX-F64: rsqrt.approx.ftz.f64
// PTX-F64-NOT: div.rn.f32
// PTX-F64-NOT: sqrt.rn.f32
// PTX-F32: {{div.rn.f32|sqrt.rn.f32}}
// PTX-F32-NOT: rcp.approx.ftz.f64
func.func @roots(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                 %v: tensor<?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %s = math.sqrt %v : tensor<?xf32>
  %one = arith.constant 1.0 : f32
  %one_v = kfuse.broadcast %one like %p : f32, tensor<?xf32>
  %d = arith.addf %s, %one_v : tensor<?xf32>
  %q = arith.divf %p, %d : tensor<?xf32>
  %r = math.rsqrt %d : tensor<?xf32>
  %n = arith.addf %q, %r : tensor<?xf32>
  kfuse.write %n to %p : tensor<?xf32>
  return
}
