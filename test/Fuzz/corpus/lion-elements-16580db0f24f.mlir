// Lion (Chen et al., 2023): the sign of an interpolated momentum.
//
//   p <- p - lr * wd * p
//   c <- m + (1 - beta1) * (g - m)          (= beta1 * m + (1 - beta1) * g)
//   p <- p - lr * sign(c)
//   m <- m + (1 - beta2) * (g - m)
// (Interpolation forms, exact in f32 where beta2 = 0.99 is not.)
func.func @lion(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-4 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.99 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %minus_one = arith.constant -1.0 : f32
  %lr_wd = arith.mulf %lr, %weight_decay : f32
  %one_minus_beta1 = arith.subf %one, %beta1 : f32
  %one_minus_beta2 = arith.subf %one, %beta2 : f32

  %p_wd = arith.mulf %lr_wd, %param : f32
  %p_decayed = arith.subf %param, %p_wd : f32
  %g_minus_m = arith.subf %grad, %exp_avg : f32
  %c_delta = arith.mulf %one_minus_beta1, %g_minus_m : f32
  %c = arith.addf %exp_avg, %c_delta : f32
  // sign(c), with sign(0) = 0 as torch.sign.
  %pos = arith.cmpf ogt, %c, %zero : f32
  %neg = arith.cmpf olt, %c, %zero : f32
  %neg_or_zero = arith.select %neg, %minus_one, %zero : i1, f32
  %sign = arith.select %pos, %one, %neg_or_zero : i1, f32
  %lr_sign = arith.mulf %lr, %sign : f32
  %p_new = arith.subf %p_decayed, %lr_sign : f32
  %m_delta = arith.mulf %one_minus_beta2, %g_minus_m : f32
  %m = arith.addf %exp_avg, %m_delta : f32

  kfuse.write %p_new to %param : f32
  kfuse.write %m to %exp_avg : f32
  return
}
