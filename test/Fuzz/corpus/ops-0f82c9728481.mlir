func.func @sgd(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
               %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
               %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32})
    attributes {kfuse.update} {
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lrv, %g : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  return
}
