// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-horizontal))' -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @sgd
// CHECK-SAME: attributes {kfuse.multi_tensor, kfuse.update}
func.func @sgd(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
               %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
               %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lrv, %g : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  return
}

// Functions that are not updates are left alone.
// CHECK-LABEL: func.func @helper
// CHECK-NOT: kfuse.multi_tensor
func.func @helper(%x: f32) {
  return
}

// -----

// expected-error @+1 {{argument #0 has the static shape 'tensor<8xf32>'; a multi-tensor update runs over groups of any size and needs dynamic shapes}}
func.func @static(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<8xf32>
  return
}

// -----

// expected-error @+1 {{a multi-tensor update has at most 8 tensor arguments, got 9}}
func.func @wide(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                %s1: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s2: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s3: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s4: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s5: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s6: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s7: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s8: tensor<?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
