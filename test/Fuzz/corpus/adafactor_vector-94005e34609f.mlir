// Adafactor (Shazeer and Stern, 2018) for a param that is a vector (a bias,
// a norm's weight), as torch.optim.Adafactor's unfactored path: the second
// moment is kept per element. Params with two or more dimensions factor it
// into a value per row and one per column instead (a 2-D update).
//
//   b      = t^beta2_decay                  (one minus beta2 at step t)
//   rho    = min(lr, 1 / sqrt(t))
//   alpha  = max(eps2, RMS(p)) * rho        (p before the decay)
//   v      <- lerp(v, g^2, b)               (from the nearer end, as torch)
//   u      = g / sqrt(max(v, eps1^2))
//   p      <- p (1 - lr wd) - alpha / max(1, RMS(u) / d) * u
//
// eps1 is the param dtype's machine epsilon in torch (None), 2^-23 here for
// f32. RMS(p) and RMS(u) are means over the tensor: two reductions, so the
// update runs in two phases.
func.func @adafactor_vector(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %variance: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "variance"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %beta2_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2_decay", kfuse.default = -0.8 : f32},
    %eps1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps1", kfuse.default = 1.1920929e-07 : f32},
    %eps2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps2", kfuse.default = 1.0e-3 : f32},
    %d: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "d", kfuse.default = 1.0 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %b = math.powf %step, %beta2_decay : f32
  %root_t = math.sqrt %step : f32
  %inv_root_t = arith.divf %one, %root_t : f32
  %rho = arith.minimumf %lr, %inv_root_t : f32
  %lr_wd = arith.mulf %lr, %weight_decay : f32
  %decay = arith.subf %one, %lr_wd : f32
  %eps1_sq = arith.mulf %eps1, %eps1 : f32
  %near_start = arith.cmpf olt, %b, %half : f32
  %one_minus_b = arith.subf %one, %b : f32
  %from = arith.select %near_start, %b, %one_minus_b : f32

  %g_sq = arith.mulf %grad, %grad : f32
  %v_step = arith.subf %g_sq, %variance : f32
  %v_move = arith.mulf %from, %v_step : f32
  %v_up = arith.addf %variance, %v_move : f32
  %v_down = arith.subf %g_sq, %v_move : f32
  %v = arith.select %near_start, %v_up, %v_down : f32
  %v_safe = arith.maximumf %v, %eps1_sq : f32
  %inv_root = math.rsqrt %v_safe : f32
  %u = arith.mulf %grad, %inv_root : f32

  // RMS of the param and of the update, one per tensor.
  %p_sq = arith.mulf %param, %param : f32
  %u_sq = arith.mulf %u, %u : f32
  %p_ms = kfuse.reduce <mean> %p_sq dim 0 : f32 -> f32
  %u_ms = kfuse.reduce <mean> %u_sq dim 0 : f32 -> f32
  %p_rms = math.sqrt %p_ms : f32
  %u_rms = math.sqrt %u_ms : f32
  %scale = arith.maximumf %eps2, %p_rms : f32
  %alpha = arith.mulf %scale, %rho : f32
  %u_ratio = arith.divf %u_rms, %d : f32
  %denom = arith.maximumf %one, %u_ratio : f32
  %step_size = arith.divf %alpha, %denom : f32

  %p_decayed = arith.mulf %param, %decay : f32
  %delta = arith.mulf %step_size, %u : f32
  %p_new = arith.subf %p_decayed, %delta : f32
  kfuse.write %p_new to %param : f32
  kfuse.write %v to %variance : f32
  return
}
