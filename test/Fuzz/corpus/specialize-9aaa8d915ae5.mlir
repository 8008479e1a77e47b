func.func @sgd_momentum(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>},
    %mu: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %muv = kfuse.broadcast %mu like %p : f32, tensor<?xf32>
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %mm = arith.mulf %m, %muv : tensor<?xf32>
  %nm = arith.addf %mm, %g : tensor<?xf32>
  %d = arith.mulf %lrv, %nm : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  kfuse.write %nm to %m : tensor<?xf32>
  return
}
