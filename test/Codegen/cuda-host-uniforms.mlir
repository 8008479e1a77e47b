// RUN: kfuse compile %library/optim/adamw.mlir --emit=cuda | FileCheck %s
// RUN: kfuse compile %library/optim/adamw.mlir --emit=cuda --multi-tensor | FileCheck %s --check-prefix=MULTI
// RUN: kfuse compile %library/optim/sgd.mlir --emit=cuda | FileCheck %s --check-prefix=SGD

// A single-tensor kernel gets its uniform values from the host at each
// launch: the scalar math over hypers (in double, as the device would do it)
// is shown as a comment, and the kernel takes the struct by value instead of
// the hypers. The device code has no pow, sqrt or division in double (and
// no definition of kfuse_pow_f64, which the comment names).
// CHECK-NOT: __noinline__
// CHECK: // Uniform values, computed on the host at each launch:
// CHECK-NEXT: //  const double v{{[0-9]+}} = lr * weight_decay;
// CHECK: //  const double [[B2T:v[0-9]+]] = kfuse_pow_f64(beta2, step);
// CHECK: //  const double [[BC2:v[0-9]+]] = 1.0f - [[B2T]];
// CHECK-NEXT: //  const double {{v[0-9]+}} = sqrt([[BC2]]);
// CHECK-NEXT: //  const double [[B1T:v[0-9]+]] = kfuse_pow_f64(beta1, step);
// CHECK: struct kfuse_adamw_0_uniforms {
// CHECK: extern "C" __global__ void __launch_bounds__(256)
// CHECK-NEXT: kfuse_adamw_0(const kfuse_adamw_0_uniforms u, float *__restrict__ param, const float *__restrict__ grad, float *__restrict__ exp_avg, float *__restrict__ exp_avg_sq, long long n) {
// CHECK-NOT: double
// CHECK-NOT: pow(
// CHECK: // The last count % 4 elements.

// A multi-tensor kernel reads the hypers from the device (capturable): each
// thread still computes the uniforms, pow with codegen/UniformMath.h's
// function (one, not inlined; IEEE-rounded steps, the host's bits).
// MULTI-NOT: computed on the host
// MULTI: static __device__ __noinline__ double kfuse_pow_f64(double x, double y) {
// MULTI: __fma_rn(
// MULTI: // Uniform values, once per thread.
// MULTI: const double {{v[0-9]+}} = kfuse_pow_f64(beta2, step);

// Comparisons of hypers (SGD's step == 1, nesterov) have no host form yet:
// the device computes them.
// SGD-NOT: computed on the host
// SGD: double lr
// SGD: // Uniform values, once per thread.
// SGD: const bool v{{[0-9]+}} = step == 1.0f;
