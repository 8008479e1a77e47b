// Adagrad, as torch.optim.Adagrad.
//
//   g   <- g + wd * p
//   sum <- sum + g * g
//   p   <- p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)
func.func @adagrad(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %sum: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "sum"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %lr_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr_decay", kfuse.default = 0.0 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-10 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %steps_before = arith.subf %step, %one : f32
  %decay = arith.mulf %steps_before, %lr_decay : f32
  %decay_1 = arith.addf %one, %decay : f32
  %clr = arith.divf %lr, %decay_1 : f32

  %p_wd = arith.mulf %param, %weight_decay : f32
  %g = arith.addf %grad, %p_wd : f32
  %g2 = arith.mulf %g, %g : f32
  %sum_new = arith.addf %sum, %g2 : f32
  %root = math.sqrt %sum_new : f32
  %std = arith.addf %root, %eps : f32
  %ratio = arith.divf %g, %std : f32
  %delta = arith.mulf %clr, %ratio : f32
  %p_new = arith.subf %param, %delta : f32

  kfuse.write %p_new to %param : f32
  kfuse.write %sum_new to %sum : f32
  return
}
