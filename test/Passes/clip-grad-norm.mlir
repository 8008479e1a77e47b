// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-clip-grad-norm))' | FileCheck %s
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-clip-grad-norm,kfuse-grad-scaling))' | FileCheck %s --check-prefix=SCALED
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-clip-grad-norm{external-norm}))' | FileCheck %s --check-prefix=EXTERNAL

// With external-norm the caller's `global_grad_norm` hyper (added last,
// default 0: no clipping) replaces the reduction: several plans clip by one
// norm. An update with its own `global_grad_norm` is left as it is.
// EXTERNAL-LABEL: func.func @sgd
// EXTERNAL-SAME: %[[G:arg1]]: tensor<?xf32> {{.*}}, %[[MAX:arg3]]: f32 {kfuse.default = 1.000000e+00 : f32, kfuse.name = "max_grad_norm", kfuse.role = #kfuse.role<hyper>}, %[[NORM:arg4]]: f32 {kfuse.default = 0.000000e+00 : f32, kfuse.name = "global_grad_norm", kfuse.role = #kfuse.role<hyper>})
// EXTERNAL-NOT: kfuse.reduce
// EXTERNAL: %[[DEN:.*]] = arith.addf %[[NORM]], %{{.*}} : f32
// EXTERNAL: %[[COEF:.*]] = arith.divf %[[MAX]], %[[DEN]] : f32
// EXTERNAL: %[[CLIP:.*]] = arith.minimumf %[[COEF]], %{{.*}} : f32
// EXTERNAL: %[[B:.*]] = kfuse.broadcast %[[CLIP]] like %[[G]]
// EXTERNAL: arith.mulf %[[G]], %[[B]] : tensor<?xf32>
// EXTERNAL-LABEL: func.func @own_rule
// EXTERNAL-SAME: %arg3: f32 {kfuse.name = "max_grad_norm", kfuse.role = #kfuse.role<hyper>}) attributes
// EXTERNAL-NOT: kfuse.reduce
// EXTERNAL: arith.divf %arg2, %arg3 : f32

// The squares of the grad reduced over the list, torch's coefficient
// min(max_grad_norm / (norm + 1e-6), 1), and every other read of the grad
// scaled by it; the added hyper comes last.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: %[[G:arg1]]: tensor<?xf32> {{.*}}, %[[LR:arg2]]: f32 {{.*}}, %[[MAX:arg3]]: f32 {kfuse.default = 1.000000e+00 : f32, kfuse.name = "max_grad_norm", kfuse.role = #kfuse.role<hyper>})
// CHECK: %[[SQ:.*]] = arith.mulf %[[G]], %[[G]] : tensor<?xf32>
// CHECK: %[[NSQ:.*]] = kfuse.reduce <sum> %[[SQ]] dim 0 over list {kfuse.name = "grad_norm_sq"} : tensor<?xf32> -> f32
// CHECK: %[[NORM:.*]] = math.sqrt %[[NSQ]] : f32
// CHECK: %[[DEN:.*]] = arith.addf %[[NORM]], %{{.*}} : f32
// CHECK: %[[COEF:.*]] = arith.divf %[[MAX]], %[[DEN]] : f32
// CHECK: %[[CLIP:.*]] = arith.minimumf %[[COEF]], %{{.*}} : f32
// CHECK: %[[B:.*]] = kfuse.broadcast %[[CLIP]] like %[[G]]
// CHECK: %[[CG:.*]] = arith.mulf %[[G]], %[[B]] : tensor<?xf32>
// CHECK: arith.mulf %{{.*}}, %[[CG]] : tensor<?xf32>

// Grad scaling after clipping unscales both reads: the norm is of the
// unscaled grads.
// SCALED: %[[U:.*]] = arith.mulf %arg1, %{{.*}} : tensor<?xf32>
// SCALED: arith.mulf %[[U]], %[[U]] : tensor<?xf32>
// SCALED: arith.mulf %[[U]], %{{.*}} : tensor<?xf32>
func.func @sgd(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr"})
    attributes {kfuse.update} {
  %lr_v = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lr_v, %g : tensor<?xf32>
  %p_new = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}


// An update with a `global_grad_norm` hyper clips by its own rule: no
// hyper is added and no read of the grad is scaled; the hyper's uses become
// the norm reduced in the plan.
// CHECK-LABEL: func.func @own_rule
// CHECK-SAME: %[[G:arg1]]: tensor<?xf32> {{.*}}, %[[GN:arg2]]: f32 {{.*}}kfuse.name = "global_grad_norm"{{.*}}, %[[MAX:arg3]]: f32 {{.*}}kfuse.name = "max_grad_norm"{{.*}})
// CHECK-NOT: kfuse.name = "max_grad_norm"
// CHECK: %[[SQ:.*]] = arith.mulf %[[G]], %[[G]] : tensor<?xf32>
// CHECK: %[[NSQ:.*]] = kfuse.reduce <sum> %[[SQ]] dim 0 over list {kfuse.name = "grad_norm_sq"}
// CHECK: %[[NORM:.*]] = math.sqrt %[[NSQ]] : f32
// CHECK: %[[RATIO:.*]] = arith.divf %[[NORM]], %[[MAX]] : f32
// CHECK: %[[DIV:.*]] = arith.maximumf %[[RATIO]], %{{.*}} : f32
// CHECK: kfuse.broadcast %[[DIV]] like %[[G]]
// CHECK-NOT: %[[GN]]
func.func @own_rule(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %norm: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "global_grad_norm"},
    %max: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "max_grad_norm"})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %ratio = arith.divf %norm, %max : f32
  %div = arith.maximumf %ratio, %one : f32
  %div_v = kfuse.broadcast %div like %g : f32, tensor<?xf32>
  %d = arith.divf %g, %div_v : tensor<?xf32>
  %p_new = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}
