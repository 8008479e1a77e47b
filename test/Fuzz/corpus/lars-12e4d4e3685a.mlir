// LARS (You et al., 2017), as timm.optim.Lars: SGD whose grad is scaled per
// tensor by the trust ratio trust_coeff * ||p|| / (||g|| + wd * ||p|| + eps)
// (1 where either norm is zero; with trust_clip, at most lr, as LARC).
//
//   ratio <- (weight_decay != 0 or always_adapt) ? that ratio : 1
//   g     <- (g + wd * p) * ratio
//   buf   <- g                                       at step 1
//   buf   <- momentum * buf + (1 - dampening) * g    after
//   d     <- nesterov ? g + momentum * buf : buf
//   p     <- p - lr * d
// The flags are hypers of 0 or 1. The norms of p and g are per-tensor
// reductions of the arguments: the first pass reads p and g only.
func.func @lars(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %momentum_buffer: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "momentum_buffer"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0 : f32},
    %momentum: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "momentum", kfuse.default = 0.0 : f32},
    %dampening: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "dampening", kfuse.default = 0.0 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %nesterov: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "nesterov", kfuse.default = 0.0 : f32},
    %trust_coeff: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "trust_coeff", kfuse.default = 1.0e-3 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %trust_clip: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "trust_clip", kfuse.default = 0.0 : f32},
    %always_adapt: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "always_adapt", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %is_first = arith.cmpf oeq, %step, %one : f32
  %not_nesterov = arith.cmpf one, %nesterov, %one : f32
  %one_minus_dampening = arith.subf %one, %dampening : f32
  %decays = arith.cmpf one, %weight_decay, %zero : f32
  %adapts = arith.cmpf one, %always_adapt, %zero : f32
  %adapt = arith.ori %decays, %adapts : i1
  %clips = arith.cmpf one, %trust_clip, %zero : f32

  // The trust ratio, one per tensor.
  %p_sq = arith.mulf %param, %param : f32
  %g_sq = arith.mulf %grad, %grad : f32
  %p_norm_sq = kfuse.reduce <sum> %p_sq dim 0 : f32 -> f32
  %g_norm_sq = kfuse.reduce <sum> %g_sq dim 0 : f32 -> f32
  %p_norm = math.sqrt %p_norm_sq : f32
  %g_norm = math.sqrt %g_norm_sq : f32
  %p_decay = arith.mulf %p_norm, %weight_decay : f32
  %denom_g = arith.addf %g_norm, %p_decay : f32
  %denom = arith.addf %denom_g, %eps : f32
  %scaled_norm = arith.mulf %trust_coeff, %p_norm : f32
  %raw = arith.divf %scaled_norm, %denom : f32
  %p_pos = arith.cmpf ogt, %p_norm, %zero : f32
  %g_pos = arith.cmpf ogt, %g_norm, %zero : f32
  %both = arith.andi %p_pos, %g_pos : i1
  %trusted = arith.select %both, %raw, %one : f32
  %over_lr = arith.divf %trusted, %lr : f32
  %clipped = arith.minimumf %over_lr, %one : f32
  %bounded = arith.select %clips, %clipped, %trusted : f32
  %ratio = arith.select %adapt, %bounded, %one : f32

  // SGD on the scaled grad.
  %p_wd = arith.mulf %param, %weight_decay : f32
  %g_wd = arith.addf %grad, %p_wd : f32
  %g = arith.mulf %g_wd, %ratio : f32
  %buf_old = arith.mulf %momentum_buffer, %momentum : f32
  %g_damped = arith.mulf %g, %one_minus_dampening : f32
  %buf_next = arith.addf %buf_old, %g_damped : f32
  %buf = arith.select %is_first, %g, %buf_next : i1, f32
  %buf_m = arith.mulf %buf, %momentum : f32
  %nesterov_d = arith.addf %g, %buf_m : f32
  %d = arith.select %not_nesterov, %buf, %nesterov_d : i1, f32
  %lr_d = arith.mulf %lr, %d : f32
  %p_new = arith.subf %param, %lr_d : f32

  kfuse.write %p_new to %param : f32
  kfuse.write %buf to %momentum_buffer : f32
  return
}
