// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-grad-scaling))' | FileCheck %s
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-grad-scaling,kfuse-specialize{param-dtype=bf16},kfuse-fuse-elementwise))' | FileCheck %s --check-prefix=FUSED

// Every grad read is multiplied by the new last hyper argument inv_scale.
// CHECK-LABEL: func.func @two_grads
// CHECK-SAME: (%[[P:[^:]*]]: tensor<?xf32> {{.*}}, %[[G1:[^:]*]]: tensor<?xf32> {{.*}}, %[[G2:[^:]*]]: tensor<?xf32> {{.*}}, %[[LR:[^:]*]]: f32 {{.*}}, %[[INV:[^:]*]]: f32 {kfuse.default = 1.000000e+00 : f32, kfuse.name = "inv_scale", kfuse.role = #kfuse.role<hyper>})
// CHECK-SAME: attributes {kfuse.found_inf, kfuse.update}
// CHECK-DAG: %[[S1:.*]] = kfuse.broadcast %[[INV]] like %[[G1]]
// CHECK-DAG: %[[U1:.*]] = arith.mulf %[[G1]], %[[S1]]
// CHECK-DAG: %[[S2:.*]] = kfuse.broadcast %[[INV]] like %[[G2]]
// CHECK-DAG: %[[U2:.*]] = arith.mulf %[[G2]], %[[S2]]
// CHECK: %[[SUM:.*]] = arith.addf %[[U1]], %[[U2]]
// CHECK-NOT: arith.addf %[[G1]]

// After specialization and fusion the scaling is inside the one region,
// applied to the converted bf16 grads.
// FUSED-LABEL: func.func @two_grads
// FUSED: kfuse.fused
// FUSED-COUNT-3: kfuse.convert %{{.*}} : bf16 to f32
// FUSED-NEXT: arith.mulf %{{.*}}, %{{.*}} : f32
// FUSED-NEXT: arith.mulf %{{.*}}, %{{.*}} : f32
// FUSED-NOT: kfuse.fused
func.func @two_grads(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                     %g1: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                     %g2: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                     %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %sum = arith.addf %g1, %g2 : tensor<?xf32>
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lrv, %sum : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  return
}

// A 2-D update: the grads are matrices, inv_scale broadcasts over them.
// CHECK-LABEL: func.func @row_sums
// CHECK-SAME: (%{{[^:]*}}: tensor<?x?xf32> {{.*}}, %[[G:[^:]*]]: tensor<?x?xf32> {{.*}}, %{{[^:]*}}: tensor<?x1xf32> {{.*}}, %[[INV:[^:]*]]: f32 {kfuse.default = 1.000000e+00 : f32, kfuse.name = "inv_scale", kfuse.role = #kfuse.role<hyper>})
// CHECK-SAME: attributes {kfuse.found_inf, kfuse.update}
// CHECK: %[[S:.*]] = kfuse.broadcast %[[INV]] like %[[G]] : f32, tensor<?x?xf32>
// CHECK: %[[U:.*]] = arith.mulf %[[G]], %[[S]] : tensor<?x?xf32>
// CHECK: arith.mulf %[[U]], %[[U]] : tensor<?x?xf32>
// CHECK: arith.subf %{{.*}}, %[[U]] : tensor<?x?xf32>
// FUSED-LABEL: func.func @row_sums
// FUSED: kfuse.fused
func.func @row_sums(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>},
                    %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>},
                    %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %sq = arith.mulf %g, %g : tensor<?x?xf32>
  %sum = kfuse.reduce <sum> %sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %np = arith.subf %p, %g : tensor<?x?xf32>
  kfuse.write %sum to %r : tensor<?x1xf32>
  kfuse.write %np to %p : tensor<?x?xf32>
  return
}
