// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-clip-grad-norm))' -verify-diagnostics -split-input-file

// expected-error @+1 {{argument #2 is already named 'max_grad_norm'}}
func.func @named(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %max: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "max_grad_norm"})
    attributes {kfuse.update} {
  %p_new = arith.subf %p, %g : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{has no grad argument to clip}}
func.func @no_grad(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"})
    attributes {kfuse.update} {
  %p_new = arith.addf %p, %p : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{hyper 'global_grad_norm' must be an f32 scalar to hold the norm}}
func.func @norm_not_scalar(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %norm: f16 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "global_grad_norm"})
    attributes {kfuse.update} {
  kfuse.write %g to %p : tensor<?xf32>
  return
}
