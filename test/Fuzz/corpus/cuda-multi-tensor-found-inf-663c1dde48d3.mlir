func.func @scaled_sgd(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %buf: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "buf"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %inv_scale: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "inv_scale", kfuse.default = 1.0 : f32})
    attributes {kfuse.update, kfuse.multi_tensor, kfuse.found_inf} {
  %inv_scale_v = kfuse.broadcast %inv_scale like %grad : f32, tensor<?xf32>
  %g = arith.mulf %grad, %inv_scale_v : tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %buf_new = arith.addf %buf, %g : tensor<?xf32>
  %step = arith.mulf %lr_v, %buf_new : tensor<?xf32>
  %p_new = arith.subf %param, %step : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %buf_new to %buf : tensor<?xf32>
  return
}
