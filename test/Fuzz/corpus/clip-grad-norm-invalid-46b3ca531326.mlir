func.func @norm_not_scalar(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %norm: f16 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "global_grad_norm"})
    attributes {kfuse.update} {
  kfuse.write %g to %p : tensor<?xf32>
  return
}
