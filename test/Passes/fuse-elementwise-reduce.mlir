// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-fuse-elementwise))' | FileCheck %s

// A reduction over the whole tensor ends a region: the math before it is
// one region, the math after it another, which reads the reduced scalar
// (and the scalar math on it, cloned in) as an input.
// CHECK-LABEL: func.func @scaled_by_norm(
// CHECK: %[[SQ:.*]] = kfuse.fused(%[[P:arg0]]) : (tensor<?xf32>) -> tensor<?xf32> {
// CHECK: arith.mulf
// CHECK: %[[SUM:.*]] = kfuse.reduce <sum> %[[SQ]] dim 0 : tensor<?xf32> -> f32
// CHECK: %[[UNIT:.*]] = kfuse.fused(%[[P]], %[[SUM]]) : (tensor<?xf32>, f32) -> tensor<?xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT: %[[ROOT:.*]] = math.sqrt %[[S]] : f32
// CHECK-NEXT: arith.divf %[[X]], %[[ROOT]] : f32
// CHECK: kfuse.write %[[UNIT]] to %[[P]] : tensor<?xf32>
func.func @scaled_by_norm(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  %sq = arith.mulf %p, %p : tensor<?xf32>
  %sum = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %root = math.sqrt %sum : f32
  %root_v = kfuse.broadcast %root like %p : f32, tensor<?xf32>
  %unit = arith.divf %p, %root_v : tensor<?xf32>
  kfuse.write %unit to %p : tensor<?xf32>
  return
}

// A reduction of an argument itself reads it through a region of its own
// (an identity copy), so that the code generator finds every reduction fed
// by a region.
// CHECK-LABEL: func.func @mean_of_grad(
// CHECK: %[[COPY:.*]] = kfuse.fused(%[[G:arg1]]) : (tensor<?xf32>) -> tensor<?xf32> {
// CHECK: kfuse.reduce <mean> %[[COPY]] dim 0 : tensor<?xf32> -> f32
func.func @mean_of_grad(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                        %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>}) attributes {kfuse.update} {
  %mean = kfuse.reduce <mean> %g dim 0 : tensor<?xf32> -> f32
  %mean_v = kfuse.broadcast %mean like %p : f32, tensor<?xf32>
  %centered = arith.subf %g, %mean_v : tensor<?xf32>
  %p_new = arith.subf %p, %centered : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}
