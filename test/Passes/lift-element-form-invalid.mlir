// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-lift-element-form))' -split-input-file -verify-diagnostics

func.func private @helper(f32) -> f32

func.func @calls(%p: f32 {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  // expected-error @+1 {{'func.call' op in an element-form update: its body takes elementwise ops (arith, math) and kfuse.write; write the update on tensors to use this op}}
  %q = func.call @helper(%p) : (f32) -> f32
  kfuse.write %q to %p : f32
  return
}

// -----

func.func @integer_scalar(%p: f32 {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  %two = arith.constant 2 : i32
  // expected-error @+1 {{'math.fpowi' op reads a scalar of type 'i32' elementwise; an element-form update broadcasts float and i1 scalars only}}
  %q = math.fpowi %p, %two : f32, i32
  kfuse.write %q to %p : f32
  return
}

// -----

func.func @varying_to_tensor_level(
    %p: f32 {kfuse.role = #kfuse.role<param>},
    %v: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "v", kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  %sq = arith.mulf %p, %p : f32
  kfuse.write %p to %p : f32
  // expected-error @+1 {{'kfuse.write' op writes a value that varies per element to 'v', a state at the tensor level; reduce it over the tensor first}}
  kfuse.write %sq to %v : f32
  return
}
