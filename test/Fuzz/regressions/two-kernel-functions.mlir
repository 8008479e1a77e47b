// Lion (Chen et al., 2023): the sign of an interpolated momentum.
//
//   p <- p - lr * wd * p
//   c <- m + (1 - beta1) * (g - m)          (= beta1 * m + (1 - beta1) * g)
//   p <- p - lr * sign(c)
//   m <- m + (1 - beta2) * (g - m)
// (Interpolation forms, exact in f32 where beta2 = 0.99 is not.)
func.func @lion(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %exp_avg: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "exp_avg"},
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

  %lr_wd_v = kfuse.broadcast %lr_wd like %param : f32, tensor<?xf32>
  %omb1_v = kfuse.broadcast %one_minus_beta1 like %param : f32, tensor<?xf32>
  %omb2_v = kfuse.broadcast %one_minus_beta2 like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %zero_v = kfuse.broadcast %zero like %param : f32, tensor<?xf32>
  %one_v = kfuse.broadcast %one like %param : f32, tensor<?xf32>
  %minus_one_v = kfuse.broadcast %minus_one like %param : f32, tensor<?xf32>

  %p_wd = arith.mulf %lr_wd_v, %param : tensor<?xf32>
  %p_decayed = arith.subf %param, %p_wd : tensor<?xf32>
  %g_minus_m = arith.subf %grad, %exp_avg : tensor<?xf32>
  %c_delta = arith.mulf %omb1_v, %g_minus_m : tensor<?xf32>
  %c = arith.addf %exp_avg, %c_delta : tensor<?xf32>
  // sign(c), with sign(0) = 0 as torch.sign.
  %pos = arith.cmpf ogt, %c, %zero_v : tensor<?xf32>
  %neg = arith.cmpf olt, %c, %zero_v : tensor<?xf32>
  %neg_or_zero = arith.select %neg, %minus_one_v, %zero_v : tensor<?xi1>, tensor<?xf32>
  %sign = arith.select %pos, %one_v, %neg_or_zero : tensor<?xi1>, tensor<?xf32>
  %lr_sign = arith.mulf %lr_v, %sign : tensor<?xf32>
  %p_new = arith.subf %p_decayed, %lr_sign : tensor<?xf32>
  %m_delta = arith.mulf %omb2_v, %g_minus_m : tensor<?xf32>
  %m = arith.addf %exp_avg, %m_delta : tensor<?xf32>

  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %m to %exp_avg : tensor<?xf32>
  return
}
// RMSNorm forward, as torch.nn.functional.rms_norm over the last dimension,
// saving rstd for the backward:
//
//   rstd = 1 / sqrt(sum(x^2) / n + eps)
//   y    = x * rstd * weight
func.func @rmsnorm_fwd(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "rstd"},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-6 : f32})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
  %x_sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ssq = kfuse.reduce <sum> %x_sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %ssq : f32, tensor<?x1xf32>
  %ms = arith.divf %ssq, %n_r : tensor<?x1xf32>
  %eps_r = kfuse.broadcast %eps like %ms : f32, tensor<?x1xf32>
  %ms_eps = arith.addf %ms, %eps_r : tensor<?x1xf32>
  %rs = math.rsqrt %ms_eps : tensor<?x1xf32>
  %rs_b = kfuse.broadcast %rs like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %xhat = arith.mulf %x, %rs_b : tensor<?x?xf32>
  %w_b = kfuse.broadcast %weight like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %out = arith.mulf %xhat, %w_b : tensor<?x?xf32>
  kfuse.write %out to %y : tensor<?x?xf32>
  kfuse.write %rs to %rstd : tensor<?x1xf32>
  return
}
