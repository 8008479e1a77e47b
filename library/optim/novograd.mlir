// NovoGrad (Ginsburg et al., 2019), as Apex's FusedNovoGrad: the second
// moment is one value per tensor, a running norm of the tensor's grad.
//
//   n  <- ||g||_2, or max |g| when norm_type is 0
//   v  <- n                                    when init_from_norm (the
//         drop-in's first step unless init_zero)
//   v  <- sqrt(beta2 * v^2 + (1 - beta2) * n^2)  (norm_type 2)
//   v  <- beta2 * v + (1 - beta2) * n            (norm_type 0)
//   d  <- v / sqrt(1 - beta2^t) + eps            (bias correction off: v + eps)
//   with reg_inside_moment:
//     m <- beta1 * m + beta3 * (g / d + wd * p);  p <- p - lr * m / bc1
//   else (decoupled):
//     m <- beta1 * m + beta3 * g;  p <- p - lr * ((m / bc1) / d + wd * p)
// beta3 = 1 - beta1 with grad_averaging, else 1; bc1 = 1 - beta1^t. The flags
// are hypers of 0 or 1. exp_avg_sq is a state at the tensor level: one f32
// per tensor, read and written once per tensor.
func.func @novograd(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %exp_avg_sq: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg_sq", kfuse.level = #kfuse.level<tensor>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.999 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32},
    %bias_correction: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "bias_correction", kfuse.default = 1.0 : f32},
    %grad_averaging: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "grad_averaging", kfuse.default = 1.0 : f32},
    %reg_inside_moment: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "reg_inside_moment", kfuse.default = 0.0 : f32},
    %norm_type: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "norm_type", kfuse.default = 2.0 : f32},
    %init_from_norm: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "init_from_norm", kfuse.default = 0.0 : f32})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %max_norm = arith.cmpf oeq, %norm_type, %zero : f32
  %inside = arith.cmpf one, %reg_inside_moment, %zero : f32
  %init = arith.cmpf one, %init_from_norm, %zero : f32
  %one_minus_beta2 = arith.subf %one, %beta2 : f32
  %beta1_avg = arith.mulf %beta1, %grad_averaging : f32
  %beta3 = arith.subf %one, %beta1_avg : f32
  %beta1_t = math.powf %beta1, %step : f32
  %beta2_t = math.powf %beta2, %step : f32
  %beta1_tc = arith.mulf %beta1_t, %bias_correction : f32
  %beta2_tc = arith.mulf %beta2_t, %bias_correction : f32
  %bc1 = arith.subf %one, %beta1_tc : f32
  %bc2_sq = arith.subf %one, %beta2_tc : f32
  %bc2 = math.sqrt %bc2_sq : f32

  // The grad's norm, one per tensor, and the running norm v.
  %g_sq = arith.mulf %grad, %grad : f32
  %g_abs = math.absf %grad : f32
  %n_sq = kfuse.reduce <sum> %g_sq dim 0 : f32 -> f32
  %n_max = kfuse.reduce <max> %g_abs dim 0 : f32 -> f32
  %n_l2 = math.sqrt %n_sq : f32
  %n = arith.select %max_norm, %n_max, %n_l2 : f32
  %v_sq = arith.mulf %exp_avg_sq, %exp_avg_sq : f32
  %v_sq_old = arith.mulf %beta2, %v_sq : f32
  %v_sq_in = arith.mulf %one_minus_beta2, %n_sq : f32
  %v_sq_new = arith.addf %v_sq_old, %v_sq_in : f32
  %v_l2 = math.sqrt %v_sq_new : f32
  %v_old = arith.mulf %beta2, %exp_avg_sq : f32
  %v_in = arith.mulf %one_minus_beta2, %n_max : f32
  %v_max = arith.addf %v_old, %v_in : f32
  %v_blend = arith.select %max_norm, %v_max, %v_l2 : f32
  %v = arith.select %init, %n, %v_blend : f32
  %v_hat = arith.divf %v, %bc2 : f32
  %denom = arith.addf %v_hat, %eps : f32

  // The moment and the param.
  %p_decay = arith.mulf %weight_decay, %param : f32
  %g_scaled = arith.divf %grad, %denom : f32
  %g_reg = arith.addf %g_scaled, %p_decay : f32
  %g_in = arith.select %inside, %g_reg, %grad : f32
  %m_old = arith.mulf %beta1, %exp_avg : f32
  %m_in = arith.mulf %beta3, %g_in : f32
  %m = arith.addf %m_old, %m_in : f32
  %m_hat = arith.divf %m, %bc1 : f32
  %adaptive = arith.divf %m_hat, %denom : f32
  %decoupled = arith.addf %adaptive, %p_decay : f32
  %update = arith.select %inside, %m_hat, %decoupled : f32
  %delta = arith.mulf %lr, %update : f32
  %p_new = arith.subf %param, %delta : f32
  kfuse.write %p_new to %param : f32
  kfuse.write %m to %exp_avg : f32
  kfuse.write %v to %exp_avg_sq : f32
  return
}
