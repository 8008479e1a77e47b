func.func @momentum(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
                    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                    %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %nm = arith.addf %m, %g : tensor<?xf32>
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lrv, %nm : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  kfuse.write %nm to %m : tensor<?xf32>
  return
}
