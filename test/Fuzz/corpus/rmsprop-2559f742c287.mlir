// RMSprop, as torch.optim.RMSprop.
//
//   g   <- g + wd * p
//   sq  <- alpha * sq + (1 - alpha) * g * g
//   avg <- sqrt(sq) + eps
//   p   <- p - lr * g / avg
func.func @rmsprop(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %square_avg: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "square_avg"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %alpha: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "alpha", kfuse.default = 0.99 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %one_minus_alpha = arith.subf %one, %alpha : f32
  %wd_v = kfuse.broadcast %weight_decay like %param : f32, tensor<?xf32>
  %alpha_v = kfuse.broadcast %alpha like %param : f32, tensor<?xf32>
  %rest_v = kfuse.broadcast %one_minus_alpha like %param : f32, tensor<?xf32>
  %eps_v = kfuse.broadcast %eps like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>

  %p_wd = arith.mulf %param, %wd_v : tensor<?xf32>
  %g = arith.addf %grad, %p_wd : tensor<?xf32>
  %sq_old = arith.mulf %square_avg, %alpha_v : tensor<?xf32>
  %g2 = arith.mulf %g, %g : tensor<?xf32>
  %g2_new = arith.mulf %g2, %rest_v : tensor<?xf32>
  %sq = arith.addf %sq_old, %g2_new : tensor<?xf32>
  %root = math.sqrt %sq : tensor<?xf32>
  %avg = arith.addf %root, %eps_v : tensor<?xf32>
  %ratio = arith.divf %g, %avg : tensor<?xf32>
  %delta = arith.mulf %lr_v, %ratio : tensor<?xf32>
  %p_new = arith.subf %param, %delta : tensor<?xf32>

  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %sq to %square_avg : tensor<?xf32>
  return
}
