// LAMB's update in element form: AdamW's direction r, scaled per tensor by
// the trust ratio ||p|| / ||r|| (1 where either norm is zero). The norms are
// per-tensor reductions, which the interpreter evaluates and the update
// schedules do not generate yet.
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
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %beta1_t = math.powf %beta1, %step : f32
  %beta2_t = math.powf %beta2, %step : f32
  %bias_correction1 = arith.subf %one, %beta1_t : f32
  %bias_correction2 = arith.subf %one, %beta2_t : f32
  %one_minus_beta1 = arith.subf %one, %beta1 : f32
  %one_minus_beta2 = arith.subf %one, %beta2 : f32

  %g_minus_m = arith.subf %grad, %exp_avg : f32
  %m_delta = arith.mulf %one_minus_beta1, %g_minus_m : f32
  %m = arith.addf %exp_avg, %m_delta : f32
  %g_sq = arith.mulf %grad, %grad : f32
  %g_sq_minus_v = arith.subf %g_sq, %exp_avg_sq : f32
  %v_delta = arith.mulf %one_minus_beta2, %g_sq_minus_v : f32
  %v = arith.addf %exp_avg_sq, %v_delta : f32
  %m_hat = arith.divf %m, %bias_correction1 : f32
  %v_hat = arith.divf %v, %bias_correction2 : f32
  %v_hat_sqrt = math.sqrt %v_hat : f32
  %denom = arith.addf %v_hat_sqrt, %eps : f32
  %adam = arith.divf %m_hat, %denom : f32
  %decay = arith.mulf %weight_decay, %param : f32
  %r = arith.addf %adam, %decay : f32

  // The trust ratio: one value per tensor.
  %p_sq = arith.mulf %param, %param : f32
  %r_sq = arith.mulf %r, %r : f32
  %p_norm_sq = kfuse.reduce <sum> %p_sq dim 0 : f32 -> f32
  %r_norm_sq = kfuse.reduce <sum> %r_sq dim 0 : f32 -> f32
  %p_norm = math.sqrt %p_norm_sq : f32
  %r_norm = math.sqrt %r_norm_sq : f32
  %ratio = arith.divf %p_norm, %r_norm : f32
  %p_pos = arith.cmpf ogt, %p_norm, %zero : f32
  %r_pos = arith.cmpf ogt, %r_norm, %zero : f32
  %both = arith.andi %p_pos, %r_pos : i1
  %trust = arith.select %both, %ratio, %one : f32
  %step_size = arith.mulf %lr, %trust : f32

  %delta = arith.mulf %step_size, %r : f32
  %p_new = arith.subf %param, %delta : f32
  kfuse.write %p_new to %param : f32
  kfuse.write %m to %exp_avg : f32
  kfuse.write %v to %exp_avg_sq : f32
  return
}
