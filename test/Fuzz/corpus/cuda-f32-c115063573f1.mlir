func.func @decayed_sgd(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %wd: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "wd", kfuse.default = 0.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %lr_wd = arith.mulf %lr, %wd : f32
  %decay = arith.subf %one, %lr_wd : f32
  %decay_v = kfuse.broadcast %decay like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %p_decayed = arith.mulf %param, %decay_v : tensor<?xf32>
  %step = arith.mulf %lr_v, %grad : tensor<?xf32>
  %p_new = arith.subf %p_decayed, %step : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  return
}
