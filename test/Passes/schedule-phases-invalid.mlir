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

// -----

// The running norm is written after the reduction (phase 1), but phase 2
// (after a second reduction) still reads its previous value: the last
// block of phase 1 has stored the new one by then.
func.func @tensor_level_read_late(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
    %v: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "v", kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  %sq = arith.mulf %p, %p : tensor<?xf32>
  %s = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %v_new = arith.addf %v, %s : f32
  %b = kfuse.broadcast %v_new like %p : f32, tensor<?xf32>
  %q = arith.mulf %p, %b : tensor<?xf32>
  %t = kfuse.reduce <sum> %q dim 0 : tensor<?xf32> -> f32
  // expected-note @+1 {{read here}}
  %late = arith.mulf %v, %t : f32
  %lb = kfuse.broadcast %late like %p : f32, tensor<?xf32>
  %p_new = arith.addf %p, %lb : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  // expected-error @+1 {{'kfuse.write' op writes 'v', a state at the tensor level, in reduction phase 1, but phase 2 reads its previous value; a state at the tensor level is read no later than the phase that writes it}}
  kfuse.write %v_new to %v : f32
  return
}
