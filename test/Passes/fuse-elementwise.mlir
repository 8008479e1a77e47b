// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-fuse-elementwise))' | FileCheck %s
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-fuse-elementwise{max-group-size=1}))' | FileCheck %s --check-prefix=SINGLE
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-fuse-elementwise{max-group-size=2}))' | FileCheck %s --check-prefix=PAIRS

// Producer-consumer chains and siblings (the two writes) land in one region;
// the bias-correction scalars are cloned into it, and the broadcasts become
// scalar operands.
// CHECK-LABEL: func.func @momentum
// CHECK-SAME: (%[[P:[^:]*]]: tensor<?xf32> {{.*}}, %[[G:[^:]*]]: tensor<?xf32> {{.*}}, %[[M:[^:]*]]: tensor<?xf32> {{.*}}, %[[LR:[^:]*]]: f32 {{.*}}, %[[MU:[^:]*]]: f32
// CHECK-NOT: kfuse.broadcast
// CHECK: %[[R:.*]]:2 = kfuse.fused(%[[M]], %[[MU]], %[[G]], %[[LR]], %[[P]]) : (tensor<?xf32>, f32, tensor<?xf32>, f32, tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>)
// CHECK-NEXT: ^bb0(%[[ME:.*]]: f32, %[[MUE:.*]]: f32, %[[GE:.*]]: f32, %[[LRE:.*]]: f32, %[[PE:.*]]: f32):
// CHECK-NEXT: %[[MM:.*]] = arith.mulf %[[ME]], %[[MUE]] : f32
// CHECK-NEXT: %[[NM:.*]] = arith.addf %[[MM]], %[[GE]] : f32
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[HALF:.*]] = arith.divf %[[LRE]], %[[TWO]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.mulf %[[HALF]], %[[NM]] : f32
// CHECK-NEXT: %[[NP:.*]] = arith.subf %[[PE]], %[[D]] : f32
// CHECK-NEXT: kfuse.yield %[[NM]], %[[NP]] : f32, f32
// CHECK: kfuse.write %[[R]]#1 to %[[P]]
// CHECK: kfuse.write %[[R]]#0 to %[[M]]
// CHECK-NOT: kfuse.fused

// One region per elementwise op; intermediate tensors flow between them.
// SINGLE-LABEL: func.func @momentum
// SINGLE-COUNT-4: kfuse.fused
// SINGLE-NOT: kfuse.fused

// PAIRS-LABEL: func.func @momentum
// PAIRS-COUNT-2: kfuse.fused
// PAIRS-NOT: kfuse.fused

// SINGLE-LABEL: func.func @copy
// PAIRS-LABEL: func.func @copy

func.func @momentum(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>},
    %mu: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %two = arith.constant 2.0 : f32
  %half_lr = arith.divf %lr, %two : f32
  %muv = kfuse.broadcast %mu like %p : f32, tensor<?xf32>
  %lrv = kfuse.broadcast %half_lr like %p : f32, tensor<?xf32>
  %mm = arith.mulf %m, %muv : tensor<?xf32>
  %nm = arith.addf %mm, %g : tensor<?xf32>
  %d = arith.mulf %lrv, %nm : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  kfuse.write %nm to %m : tensor<?xf32>
  return
}

// A param written with another argument, and a state with a uniform value,
// still get a region (one: they are siblings): every write is fed by a kernel.
// CHECK-LABEL: func.func @copy
// CHECK: %[[C:.*]]:2 = kfuse.fused(%arg1) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: kfuse.write %[[C]]#0 to %arg0
// CHECK: kfuse.write %[[C]]#1 to %arg2
func.func @copy(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                %g: tensor<4xf32> {kfuse.role = #kfuse.role<grad>},
                %s: tensor<4xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %z = kfuse.broadcast %zero like %p : f32, tensor<4xf32>
  kfuse.write %g to %p : tensor<4xf32>
  kfuse.write %z to %s : tensor<4xf32>
  return
}
