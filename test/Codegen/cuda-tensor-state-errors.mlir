// RUN: not kfuse compile %s --emit=cuda 2>&1 | FileCheck %s

// The last block to finish a tensor's chunks stores a state at the tensor
// level, counted with the reductions' arrivals: an update without a
// reduction has no such count, and says so rather than emit a race.

// CHECK: cuda-tensor-state-errors.mlir:[[# @LINE + 8]]:3: error: 'kfuse.write' op writes 'count', a state at the tensor level, in an update without reductions; the block that stores it is counted with theirs
func.func @tensor_state_without_reduction(
    %p: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
    %count: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "count", kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %next = arith.addf %count, %one : f32
  kfuse.write %p to %p : f32
  kfuse.write %next to %count : f32
  return
}
