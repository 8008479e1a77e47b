// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-master-weights))' -split-input-file -verify-diagnostics | FileCheck %s
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-master-weights,kfuse-specialize{grad-dtype=bf16 model-dtype=f16},canonicalize,kfuse-fuse-elementwise,canonicalize))' -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=FUSED

// The updated param is written to a new model argument too, appended after
// all the others.
// CHECK-LABEL: func.func @momentum
// CHECK-SAME: (%[[P:[^:]*]]: tensor<?xf32> {{.*}}, %[[G:[^:]*]]: tensor<?xf32> {{.*}}, %[[M:[^:]*]]: tensor<?xf32> {{.*}}, %[[LR:[^:]*]]: f32 {{.*}}, %[[COPY:[^:]*]]: tensor<?xf32> {kfuse.name = "p_model", kfuse.role = #kfuse.role<model>})
// CHECK: %[[NP:.*]] = arith.subf
// CHECK: kfuse.write %[[NP]] to %[[P]]
// CHECK-NEXT: kfuse.write %[[NP]] to %[[COPY]]

// Specialized: f32 master, bf16 grads, an f16 copy converted in the region.
// FUSED-LABEL: func.func @momentum
// FUSED-SAME: %{{[^:]*}}: tensor<?xf32> {{.*}}role<param>{{.*}}, %{{[^:]*}}: tensor<?xbf16> {{.*}}, %{{[^:]*}}: tensor<?xf32> {{.*}}, %{{[^:]*}}: f32 {{.*}}, %[[COPY:[^:]*]]: tensor<?xf16> {{.*}}role<model>
// FUSED: %[[R:.*]]:3 = kfuse.fused
// FUSED: kfuse.convert %{{.*}} : f32 to f16
// FUSED: kfuse.write %[[R]]#{{[0-9]}} to %[[COPY]] : tensor<?xf16>
func.func @momentum(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
                    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                    %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %nm = arith.addf %m, %g : tensor<?xf32>
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lrv, %nm : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  kfuse.write %nm to %m : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{the update already has 'model' arguments}}
func.func @has_model(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                     %c: tensor<?xf32> {kfuse.role = #kfuse.role<model>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  kfuse.write %p to %c : tensor<?xf32>
  return
}
