func.func @sgd(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %momentum_buffer: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "momentum_buffer"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %momentum: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "momentum", kfuse.default = 0.9 : f32},
    %dampening: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "dampening", kfuse.default = 0.0 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %nesterov: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "nesterov", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %is_first = arith.cmpf oeq, %step, %one : f32
  %not_nesterov = arith.cmpf one, %nesterov, %one : f32
  %one_minus_dampening = arith.subf %one, %dampening : f32

  %wd_v = kfuse.broadcast %weight_decay like %param : f32, tensor<?xf32>
  %momentum_v = kfuse.broadcast %momentum like %param : f32, tensor<?xf32>
  %damp_v = kfuse.broadcast %one_minus_dampening like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %is_first_v = kfuse.broadcast %is_first like %param : i1, tensor<?xf32>
  %not_nesterov_v = kfuse.broadcast %not_nesterov like %param : i1, tensor<?xf32>

  %p_wd = arith.mulf %param, %wd_v : tensor<?xf32>
  %g = arith.addf %grad, %p_wd : tensor<?xf32>
  %buf_old = arith.mulf %momentum_buffer, %momentum_v : tensor<?xf32>
  %g_damped = arith.mulf %g, %damp_v : tensor<?xf32>
  %buf_next = arith.addf %buf_old, %g_damped : tensor<?xf32>
  %buf = arith.select %is_first_v, %g, %buf_next : tensor<?xi1>, tensor<?xf32>
  %buf_m = arith.mulf %buf, %momentum_v : tensor<?xf32>
  %nesterov_d = arith.addf %g, %buf_m : tensor<?xf32>
  %d = arith.select %not_nesterov_v, %buf, %nesterov_d : tensor<?xi1>, tensor<?xf32>
  %lr_d = arith.mulf %lr_v, %d : tensor<?xf32>
  %p_new = arith.subf %param, %lr_d : tensor<?xf32>

  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %buf to %momentum_buffer : tensor<?xf32>
  return
}
