func.func @two_grads(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                     %g1: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                     %g2: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                     %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %sum = arith.addf %g1, %g2 : tensor<?xf32>
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lrv, %sum : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  return
}
