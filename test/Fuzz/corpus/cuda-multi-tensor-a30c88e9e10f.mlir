func.func @momentum(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %buf: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "buf"},
    %momentum: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "momentum", kfuse.default = 0.9 : f32},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update, kfuse.multi_tensor} {
  %ten = arith.constant 10.0 : f32
  %ramp = arith.divf %step, %ten : f32
  %one = arith.constant 1.0 : f32
  %warm = arith.minimumf %ramp, %one : f32
  %lr_t = arith.mulf %lr, %warm : f32
  %momentum_v = kfuse.broadcast %momentum like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr_t like %param : f32, tensor<?xf32>
  %buf_old = arith.mulf %buf, %momentum_v : tensor<?xf32>
  %buf_new = arith.addf %buf_old, %grad : tensor<?xf32>
  %step_v = arith.mulf %lr_v, %buf_new : tensor<?xf32>
  %p_new = arith.subf %param, %step_v : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %buf_new to %buf : tensor<?xf32>
  return
}
