// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-lift-element-form))' -split-input-file | FileCheck %s

// The element arguments become tensors; each scalar read elementwise is
// broadcast once, before its first such use; math on hypers alone stays
// scalar.
// CHECK-LABEL: func.func @sgd_momentum(
// CHECK-SAME: %[[P:arg[0-9]+]]: tensor<?xf32> {kfuse.role = #kfuse.role<param>}
// CHECK-SAME: %[[G:arg[0-9]+]]: tensor<?xf32> {kfuse.role = #kfuse.role<grad>}
// CHECK-SAME: %[[B:arg[0-9]+]]: tensor<?xf32> {kfuse.role = #kfuse.role<state>}
// CHECK-SAME: %[[LR:arg[0-9]+]]: f32 {kfuse.role = #kfuse.role<hyper>}
// CHECK-SAME: %[[MU:arg[0-9]+]]: f32 {kfuse.role = #kfuse.role<hyper>}
// CHECK: %[[ONE:.*]] = arith.constant 1.0{{0*}}e+00 : f32
// CHECK: %[[DAMP:.*]] = arith.subf %[[ONE]], %[[MU]] : f32
// CHECK: %[[MU_V:.*]] = kfuse.broadcast %[[MU]] like %[[P]] : f32, tensor<?xf32>
// CHECK: %[[KEPT:.*]] = arith.mulf %[[MU_V]], %[[B]] : tensor<?xf32>
// CHECK: %[[DAMP_V:.*]] = kfuse.broadcast %[[DAMP]] like %[[P]] : f32, tensor<?xf32>
// CHECK: %[[NEW:.*]] = arith.mulf %[[DAMP_V]], %[[G]] : tensor<?xf32>
// CHECK: %[[BUF:.*]] = arith.addf %[[KEPT]], %[[NEW]] : tensor<?xf32>
// CHECK: %[[LR_V:.*]] = kfuse.broadcast %[[LR]] like %[[P]] : f32, tensor<?xf32>
// CHECK: %[[STEP:.*]] = arith.mulf %[[LR_V]], %[[BUF]] : tensor<?xf32>
// CHECK: %[[STEP2:.*]] = arith.mulf %[[MU_V]], %[[STEP]] : tensor<?xf32>
// CHECK: %[[P_NEW:.*]] = arith.subf %[[P]], %[[STEP2]] : tensor<?xf32>
// CHECK: kfuse.write %[[P_NEW]] to %[[P]] : tensor<?xf32>
// CHECK: kfuse.write %[[BUF]] to %[[B]] : tensor<?xf32>
func.func @sgd_momentum(
    %p: f32 {kfuse.role = #kfuse.role<param>},
    %g: f32 {kfuse.role = #kfuse.role<grad>},
    %buf: f32 {kfuse.role = #kfuse.role<state>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>},
    %mu: f32 {kfuse.role = #kfuse.role<hyper>}) attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %damp = arith.subf %one, %mu : f32
  %kept = arith.mulf %mu, %buf : f32
  %new = arith.mulf %damp, %g : f32
  %b = arith.addf %kept, %new : f32
  %step = arith.mulf %lr, %b : f32
  %step2 = arith.mulf %mu, %step : f32
  %p_new = arith.subf %p, %step2 : f32
  kfuse.write %p_new to %p : f32
  kfuse.write %b to %buf : f32
  return
}

// -----

// Comparisons yield i1 tensors; an i1 or constant scalar read elementwise is
// broadcast; bf16 elements become bf16 tensors.
// CHECK-LABEL: func.func @sign_step(
// CHECK-SAME: tensor<?xbf16>
// CHECK: %[[ZERO:.*]] = arith.constant 0.0{{0*}}e+00 : f32
// CHECK: %[[GF:.*]] = arith.extf %{{.*}} : tensor<?xbf16> to tensor<?xf32>
// CHECK: %[[ZERO_V:.*]] = kfuse.broadcast %[[ZERO]] like %{{.*}} : f32, tensor<?xbf16>
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[GF]], %[[ZERO_V]] : tensor<?xf32>
// CHECK: %[[FLAG_V:.*]] = kfuse.broadcast %{{.*}} like %{{.*}} : i1, tensor<?xbf16>
// CHECK: arith.andi %[[POS]], %[[FLAG_V]] : tensor<?xi1>
// CHECK: arith.select %{{.*}} : tensor<?xi1>, tensor<?xf32>
func.func @sign_step(
    %p: bf16 {kfuse.role = #kfuse.role<param>},
    %g: bf16 {kfuse.role = #kfuse.role<grad>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>}) attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %on = arith.cmpf ogt, %lr, %zero : f32
  %gf = arith.extf %g : bf16 to f32
  %pos = arith.cmpf ogt, %gf, %zero : f32
  %both = arith.andi %pos, %on : i1
  %d = arith.select %both, %lr, %zero : f32
  %pf = arith.extf %p : bf16 to f32
  %pn = arith.subf %pf, %d : f32
  %p_new = arith.truncf %pn : f32 to bf16
  kfuse.write %p_new to %p : bf16
  return
}

// -----

// A tensor-form update is left as it is.
// CHECK-LABEL: func.func @tensor_form(
// CHECK-SAME: %[[P:arg[0-9]+]]: tensor<?xf32>
// CHECK-NEXT: kfuse.write %[[P]] to %[[P]] : tensor<?xf32>
func.func @tensor_form(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// A reduction reads its operand as a tensor and yields one scalar for the
// tensor, which later elementwise math broadcasts.
// CHECK-LABEL: func.func @scaled_by_norm(
// CHECK: %[[SQ:.*]] = arith.mulf %[[P:arg0]], %[[P]] : tensor<?xf32>
// CHECK: %[[SUM:.*]] = kfuse.reduce <sum> %[[SQ]] dim 0 : tensor<?xf32> -> f32
// CHECK: %[[ROOT:.*]] = math.sqrt %[[SUM]] : f32
// CHECK: %[[ROOT_V:.*]] = kfuse.broadcast %[[ROOT]] like %[[P]] : f32, tensor<?xf32>
// CHECK: arith.divf %[[P]], %[[ROOT_V]] : tensor<?xf32>
func.func @scaled_by_norm(%p: f32 {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  %sq = arith.mulf %p, %p : f32
  %sum = kfuse.reduce <sum> %sq dim 0 : f32 -> f32
  %root = math.sqrt %sum : f32
  %unit = arith.divf %p, %root : f32
  kfuse.write %unit to %p : f32
  return
}
