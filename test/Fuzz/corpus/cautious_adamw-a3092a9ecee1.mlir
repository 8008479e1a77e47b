// Cautious AdamW (Liang et al., 2024), as timm's AdamW(caution=True): the
// update keeps only the coordinates where the new momentum agrees in sign
// with the grad, rescaled by the fraction kept (per tensor).
//
//   p    <- p - lr * wd * p
//   m    <- m + (1 - beta1) * (g - m);  v <- v + (1 - beta2) * (g * g - v)
//   mask <- (m * g > 0) / max(mean(m * g > 0), 1e-3)
//   p    <- p - lr / (1 - beta1^t) * m * mask / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The mean is a per-tensor reduction: the plan runs in two passes, and the
// second reads the moments back as the first stored them.
func.func @cautious_adamw(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %exp_avg_sq: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg_sq"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.999 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 1.0e-2 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %floor = arith.constant 1.0e-3 : f32
  %beta1_t = math.powf %beta1, %step : f32
  %beta2_t = math.powf %beta2, %step : f32
  %bias_correction1 = arith.subf %one, %beta1_t : f32
  %bias_correction2 = arith.subf %one, %beta2_t : f32
  %step_size = arith.divf %lr, %bias_correction1 : f32
  %bias_correction2_sqrt = math.sqrt %bias_correction2 : f32
  %lr_wd = arith.mulf %lr, %weight_decay : f32
  %one_minus_beta1 = arith.subf %one, %beta1 : f32
  %one_minus_beta2 = arith.subf %one, %beta2 : f32

  %g_minus_m = arith.subf %grad, %exp_avg : f32
  %m_delta = arith.mulf %one_minus_beta1, %g_minus_m : f32
  %m = arith.addf %exp_avg, %m_delta : f32
  %g_sq = arith.mulf %grad, %grad : f32
  %g_sq_minus_v = arith.subf %g_sq, %exp_avg_sq : f32
  %v_delta = arith.mulf %one_minus_beta2, %g_sq_minus_v : f32
  %v = arith.addf %exp_avg_sq, %v_delta : f32

  // The caution mask and the fraction of the tensor it keeps.
  %agree = arith.mulf %m, %grad : f32
  %kept = arith.cmpf ogt, %agree, %zero : f32
  %mask = arith.select %kept, %one, %zero : f32
  %fraction = kfuse.reduce <mean> %mask dim 0 : f32 -> f32
  %scale = arith.maximumf %fraction, %floor : f32
  %m_masked = arith.mulf %m, %mask : f32
  %m_cautious = arith.divf %m_masked, %scale : f32

  %p_wd = arith.mulf %lr_wd, %param : f32
  %p_decayed = arith.subf %param, %p_wd : f32
  %v_sqrt = math.sqrt %v : f32
  %v_hat_sqrt = arith.divf %v_sqrt, %bias_correction2_sqrt : f32
  %denom = arith.addf %v_hat_sqrt, %eps : f32
  %m_step = arith.mulf %step_size, %m_cautious : f32
  %update = arith.divf %m_step, %denom : f32
  %p_new = arith.subf %p_decayed, %update : f32

  kfuse.write %p_new to %param : f32
  kfuse.write %m to %exp_avg : f32
  kfuse.write %v to %exp_avg_sq : f32
  return
}
