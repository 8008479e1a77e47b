// LAMB, as Apex's FusedLAMB: Adam's direction r, scaled per tensor by the
// trust ratio ||p|| / ||r||.
//
//   g <- g / max(1, global_grad_norm / max_grad_norm)   (the drop-in sets the
//        norm; 0 means no clipping)     + wd * p when not adam_w_mode (L2)
//   m <- beta1 * m + beta3 * g          (beta3 = 1 - beta1 with grad_averaging)
//   v <- beta2 * v + (1 - beta2) * g * g
//   r <- (m / bc1) / (sqrt(v / bc2) + eps) + wd * p when adam_w_mode
//   p <- p - lr * trust * r,  trust = ||p|| / ||r|| where both norms are
//        nonzero and (weight_decay != 0 or use_nvlamb), else 1
// The flags are hypers of 0 or 1. The norms are per-tensor reductions: the
// plan runs in two passes, and the second recomputes r from the moments the
// first stored.
func.func @lamb(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %exp_avg_sq: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg_sq"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.999 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-6 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 1.0e-2 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32},
    %bias_correction: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "bias_correction", kfuse.default = 1.0 : f32},
    %grad_averaging: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "grad_averaging", kfuse.default = 1.0 : f32},
    %adam_w_mode: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "adam_w_mode", kfuse.default = 1.0 : f32},
    %use_nvlamb: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "use_nvlamb", kfuse.default = 0.0 : f32},
    %global_grad_norm: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "global_grad_norm", kfuse.default = 0.0 : f32},
    %max_grad_norm: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "max_grad_norm", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  // Uniform scalars.
  %over = arith.cmpf ogt, %global_grad_norm, %max_grad_norm : f32
  %clip_ratio = arith.divf %global_grad_norm, %max_grad_norm : f32
  %clip = arith.select %over, %clip_ratio, %one : f32
  %beta1_avg = arith.mulf %beta1, %grad_averaging : f32
  %beta3 = arith.subf %one, %beta1_avg : f32
  %one_minus_beta2 = arith.subf %one, %beta2 : f32
  %beta1_t = math.powf %beta1, %step : f32
  %beta2_t = math.powf %beta2, %step : f32
  %beta1_tc = arith.mulf %beta1_t, %bias_correction : f32
  %beta2_tc = arith.mulf %beta2_t, %bias_correction : f32
  %bc1 = arith.subf %one, %beta1_tc : f32
  %bc2 = arith.subf %one, %beta2_tc : f32
  %l2_mode = arith.subf %one, %adam_w_mode : f32
  %l2 = arith.mulf %l2_mode, %weight_decay : f32
  %decoupled = arith.mulf %adam_w_mode, %weight_decay : f32
  %decays = arith.cmpf one, %weight_decay, %zero : f32
  %nvlamb = arith.cmpf one, %use_nvlamb, %zero : f32
  %trusts = arith.ori %decays, %nvlamb : i1

  // Moments and the direction r.
  %g_clipped = arith.divf %grad, %clip : f32
  %p_l2 = arith.mulf %l2, %param : f32
  %g = arith.addf %g_clipped, %p_l2 : f32
  %m_old = arith.mulf %beta1, %exp_avg : f32
  %m_in = arith.mulf %beta3, %g : f32
  %m = arith.addf %m_old, %m_in : f32
  %v_old = arith.mulf %beta2, %exp_avg_sq : f32
  %g_sq = arith.mulf %g, %g : f32
  %v_in = arith.mulf %one_minus_beta2, %g_sq : f32
  %v = arith.addf %v_old, %v_in : f32
  %m_hat = arith.divf %m, %bc1 : f32
  %v_hat = arith.divf %v, %bc2 : f32
  %v_root = math.sqrt %v_hat : f32
  %denom = arith.addf %v_root, %eps : f32
  %adam = arith.divf %m_hat, %denom : f32
  %p_decay = arith.mulf %decoupled, %param : f32
  %r = arith.addf %adam, %p_decay : f32

  // The trust ratio, one per tensor.
  %p_sq = arith.mulf %param, %param : f32
  %r_sq = arith.mulf %r, %r : f32
  %p_norm_sq = kfuse.reduce <sum> %p_sq dim 0 : f32 -> f32
  %r_norm_sq = kfuse.reduce <sum> %r_sq dim 0 : f32 -> f32
  %p_norm = math.sqrt %p_norm_sq : f32
  %r_norm = math.sqrt %r_norm_sq : f32
  %p_pos = arith.cmpf one, %p_norm, %zero : f32
  %r_pos = arith.cmpf one, %r_norm, %zero : f32
  %both = arith.andi %p_pos, %r_pos : i1
  %usable = arith.andi %both, %trusts : i1
  %ratio = arith.divf %p_norm, %r_norm : f32
  %trust = arith.select %usable, %ratio, %one : f32
  %step_size = arith.mulf %lr, %trust : f32

  %delta = arith.mulf %step_size, %r : f32
  %p_new = arith.subf %param, %delta : f32
  kfuse.write %p_new to %param : f32
  kfuse.write %m to %exp_avg : f32
  kfuse.write %v to %exp_avg_sq : f32
  return
}
