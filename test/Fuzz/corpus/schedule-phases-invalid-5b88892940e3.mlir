// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-schedule-phases))' -split-input-file -verify-diagnostics

// The state is written in phase 0, but phase 1 (after the reduction) reads
// its previous value: no schedule of whole passes has both.
func.func @old_value_after_write(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "m"})
    attributes {kfuse.update} {
  %m_new = arith.addf %m, %p : tensor<?xf32>
  %sq = arith.mulf %p, %p : tensor<?xf32>
  %sum = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %sum_v = kfuse.broadcast %sum like %p : f32, tensor<?xf32>
  // expected-note @+1 {{read here}}
  %p_new = arith.mulf %sum_v, %m : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  // expected-error @+1 {{'kfuse.write' op writes 'm' in reduction phase 0, but phase 1 reads its previous value; compute the new value after the reduction, or read the new value instead}}
  kfuse.write %m_new to %m : tensor<?xf32>
  return
}
