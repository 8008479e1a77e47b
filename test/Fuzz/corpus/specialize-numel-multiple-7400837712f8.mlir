func.func @scale(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                 %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %lr_v = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %q = arith.mulf %lr_v, %p : tensor<?xf32>
  kfuse.write %q to %p : tensor<?xf32>
  return
}
