// RMSprop centered, as torch.optim.RMSprop with centered=True.
//
//   g   <- g + wd * p
//   sq  <- alpha * sq + (1 - alpha) * g * g
//   ga  <- alpha * ga + (1 - alpha) * g
//   avg <- sqrt(sq - ga * ga) + eps
//   p   <- p - lr * g / avg
// sq - ga * ga cancels where the grads barely vary: its f32 rounding error
// (torch's too) can reach 1e-5 of the update, hence check's tolerance there.
func.func @rmsprop_centered(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %square_avg: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "square_avg"},
    %grad_avg: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "grad_avg"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %alpha: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "alpha", kfuse.default = 0.99 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %one_minus_alpha = arith.subf %one, %alpha : f32

  %p_wd = arith.mulf %param, %weight_decay : f32
  %g = arith.addf %grad, %p_wd : f32
  %sq_old = arith.mulf %square_avg, %alpha : f32
  %g2 = arith.mulf %g, %g : f32
  %g2_new = arith.mulf %g2, %one_minus_alpha : f32
  %sq = arith.addf %sq_old, %g2_new : f32
  // grad_avg <- grad_avg + (1 - alpha) * (g - grad_avg) (torch's lerp)
  %to_g = arith.subf %g, %grad_avg : f32
  %step_g = arith.mulf %to_g, %one_minus_alpha : f32
  %ga = arith.addf %grad_avg, %step_g : f32
  %ga2 = arith.mulf %ga, %ga : f32
  %var = arith.subf %sq, %ga2 : f32
  %root = math.sqrt %var : f32
  %avg = arith.addf %root, %eps : f32
  %ratio = arith.divf %g, %avg : f32
  %delta = arith.mulf %lr, %ratio : f32
  %p_new = arith.subf %param, %delta : f32

  kfuse.write %p_new to %param : f32
  kfuse.write %sq to %square_avg : f32
  kfuse.write %ga to %grad_avg : f32
  return
}
