func.func @u(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.default = 1.0e39 : f32}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
