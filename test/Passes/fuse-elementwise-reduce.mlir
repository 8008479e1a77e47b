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

// Reductions that end one group (here two column sums of a 2-D update): the
// copy of an argument one of them reduces goes before the first, so that it
// joins the region whose pass already reads the tensors, as a LayerNorm
// backward's dbias joins dweight, instead of a pass of its own.
// CHECK-LABEL: func.func @two_column_sums(
// CHECK: %[[R:.*]]:2 = kfuse.fused(%[[DY:arg0]], %[[X:arg1]]) : (tensor<?x?xf32>, tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
// CHECK: arith.mulf
// CHECK: kfuse.reduce <sum> %[[R]]#{{[01]}} dim 0
// CHECK-NEXT: kfuse.reduce <sum> %[[R]]#{{[01]}} dim 0
// CHECK-NOT: kfuse.fused(%[[DY]])
func.func @two_column_sums(
    %dy: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %dw: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>},
    %db: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.update} {
  %prod = arith.mulf %dy, %x : tensor<?x?xf32>
  %sum_prod = kfuse.reduce <sum> %prod dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %sum_dy = kfuse.reduce <sum> %dy dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  kfuse.write %sum_prod to %dw : tensor<1x?xf32>
  kfuse.write %sum_dy to %db : tensor<1x?xf32>
  return
}
