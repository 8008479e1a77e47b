// LARS without momentum, as timm.optim.Lars with momentum=0 (see lars.mlir):
//   p <- p - lr * (g + wd * p) * ratio
func.func @lars_plain(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %trust_coeff: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "trust_coeff", kfuse.default = 1.0e-3 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-8 : f32},
    %trust_clip: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "trust_clip", kfuse.default = 0.0 : f32},
    %always_adapt: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "always_adapt", kfuse.default = 0.0 : f32})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %decays = arith.cmpf one, %weight_decay, %zero : f32
  %adapts = arith.cmpf one, %always_adapt, %zero : f32
  %adapt = arith.ori %decays, %adapts : i1
  %clips = arith.cmpf one, %trust_clip, %zero : f32
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
  %p_wd = arith.mulf %param, %weight_decay : f32
  %g_wd = arith.addf %grad, %p_wd : f32
  %g = arith.mulf %g_wd, %ratio : f32
  %lr_g = arith.mulf %lr, %g : f32
  %p_new = arith.subf %param, %lr_g : f32
  kfuse.write %p_new to %param : f32
  return
}
