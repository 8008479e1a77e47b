func.func @momentum(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %buf: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "buf"},
    %momentum: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "momentum", kfuse.default = 0.9 : f32},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32})
    attributes {kfuse.update} {
  %momentum_v = kfuse.broadcast %momentum like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %b0 = arith.mulf %buf, %momentum_v : tensor<?xf32>
  %b1 = arith.addf %b0, %grad : tensor<?xf32>
  %step = arith.mulf %lr_v, %b1 : tensor<?xf32>
  %p_new = arith.subf %param, %step : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %b1 to %buf : tensor<?xf32>
  return
}
