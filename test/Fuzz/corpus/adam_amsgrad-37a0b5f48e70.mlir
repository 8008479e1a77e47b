func.func @adam_amsgrad(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
    %exp_avg_sq: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg_sq"},
    %max_exp_avg_sq: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "max_exp_avg_sq"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %beta1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta1", kfuse.default = 0.9 : f32},
    %beta2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2", kfuse.default = 0.999 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %beta1_t = math.powf %beta1, %step : f32
  %beta2_t = math.powf %beta2, %step : f32
  %bias_correction1 = arith.subf %one, %beta1_t : f32
  %bias_correction2 = arith.subf %one, %beta2_t : f32
  %step_size = arith.divf %lr, %bias_correction1 : f32
  %bias_correction2_sqrt = math.sqrt %bias_correction2 : f32
  %one_minus_beta1 = arith.subf %one, %beta1 : f32
  %one_minus_beta2 = arith.subf %one, %beta2 : f32

  %wd_v = kfuse.broadcast %weight_decay like %param : f32, tensor<?xf32>
  %one_minus_beta1_v = kfuse.broadcast %one_minus_beta1 like %param : f32, tensor<?xf32>
  %one_minus_beta2_v = kfuse.broadcast %one_minus_beta2 like %param : f32, tensor<?xf32>
  %bc2_sqrt_v = kfuse.broadcast %bias_correction2_sqrt like %param : f32, tensor<?xf32>
  %eps_v = kfuse.broadcast %eps like %param : f32, tensor<?xf32>
  %step_size_v = kfuse.broadcast %step_size like %param : f32, tensor<?xf32>

  %p_wd = arith.mulf %param, %wd_v : tensor<?xf32>
  %g = arith.addf %grad, %p_wd : tensor<?xf32>
  %g_minus_m = arith.subf %g, %exp_avg : tensor<?xf32>
  %m_delta = arith.mulf %one_minus_beta1_v, %g_minus_m : tensor<?xf32>
  %m = arith.addf %exp_avg, %m_delta : tensor<?xf32>
  %g_sq = arith.mulf %g, %g : tensor<?xf32>
  %g_sq_minus_v = arith.subf %g_sq, %exp_avg_sq : tensor<?xf32>
  %v_delta = arith.mulf %one_minus_beta2_v, %g_sq_minus_v : tensor<?xf32>
  %v = arith.addf %exp_avg_sq, %v_delta : tensor<?xf32>
  %v_max = arith.maximumf %max_exp_avg_sq, %v : tensor<?xf32>
  %v_sqrt = math.sqrt %v_max : tensor<?xf32>
  %v_hat_sqrt = arith.divf %v_sqrt, %bc2_sqrt_v : tensor<?xf32>
  %denom = arith.addf %v_hat_sqrt, %eps_v : tensor<?xf32>
  %m_step = arith.mulf %step_size_v, %m : tensor<?xf32>
  %update = arith.divf %m_step, %denom : tensor<?xf32>
  %p_new = arith.subf %param, %update : tensor<?xf32>

  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %m to %exp_avg : tensor<?xf32>
  kfuse.write %v to %exp_avg_sq : tensor<?xf32>
  kfuse.write %v_max to %max_exp_avg_sq : tensor<?xf32>
  return
}
