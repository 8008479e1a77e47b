// SGD with momentum, dampening, weight decay and Nesterov, as torch.optim.SGD.
//
//   g   <- g + wd * p
//   buf <- g                                       at step 1
//   buf <- momentum * buf + (1 - dampening) * g    after
//   d   <- nesterov ? g + momentum * buf : buf
//   p   <- p - lr * d
// `nesterov` is 0 or 1. With momentum 0, buf is g and the update is plain SGD.
func.func @sgd(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %momentum_buffer: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "momentum_buffer"},
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

  %p_wd = arith.mulf %param, %weight_decay : f32
  %g = arith.addf %grad, %p_wd : f32
  %buf_old = arith.mulf %momentum_buffer, %momentum : f32
  %g_damped = arith.mulf %g, %one_minus_dampening : f32
  %buf_next = arith.addf %buf_old, %g_damped : f32
  %buf = arith.select %is_first, %g, %buf_next : i1, f32
  %buf_m = arith.mulf %buf, %momentum : f32
  %nesterov_d = arith.addf %g, %buf_m : f32
  %d = arith.select %not_nesterov, %buf, %nesterov_d : i1, f32
  %lr_d = arith.mulf %lr, %d : f32
  %p_new = arith.subf %param, %lr_d : f32

  kfuse.write %p_new to %param : f32
  kfuse.write %buf to %momentum_buffer : f32
  return
}
