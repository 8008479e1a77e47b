func.func @own_rule(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %norm: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "global_grad_norm"},
    %max: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "max_grad_norm"})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %ratio = arith.divf %norm, %max : f32
  %div = arith.maximumf %ratio, %one : f32
  %div_v = kfuse.broadcast %div like %g : f32, tensor<?xf32>
  %d = arith.divf %g, %div_v : tensor<?xf32>
  %p_new = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}
