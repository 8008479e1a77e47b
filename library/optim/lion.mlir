// Lion (Chen et al., 2023): the sign of an interpolated momentum.
//
//   p <- p * (1 - lr * wd)
//   c <- beta1 * m + (1 - beta1) * g
//   p <- p - lr * sign(c)
//   m <- beta2 * m + (1 - beta2) * g
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
  %decay = arith.subf %one, %lr_wd : f32
  %one_minus_beta1 = arith.subf %one, %beta1 : f32
  %one_minus_beta2 = arith.subf %one, %beta2 : f32

  %decay_v = kfuse.broadcast %decay like %param : f32, tensor<?xf32>
  %beta1_v = kfuse.broadcast %beta1 like %param : f32, tensor<?xf32>
  %beta2_v = kfuse.broadcast %beta2 like %param : f32, tensor<?xf32>
  %omb1_v = kfuse.broadcast %one_minus_beta1 like %param : f32, tensor<?xf32>
  %omb2_v = kfuse.broadcast %one_minus_beta2 like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %zero_v = kfuse.broadcast %zero like %param : f32, tensor<?xf32>
  %one_v = kfuse.broadcast %one like %param : f32, tensor<?xf32>
  %minus_one_v = kfuse.broadcast %minus_one like %param : f32, tensor<?xf32>

  %p_decayed = arith.mulf %param, %decay_v : tensor<?xf32>
  %m_b1 = arith.mulf %exp_avg, %beta1_v : tensor<?xf32>
  %g_b1 = arith.mulf %grad, %omb1_v : tensor<?xf32>
  %c = arith.addf %m_b1, %g_b1 : tensor<?xf32>
  // sign(c), with sign(0) = 0 as torch.sign.
  %pos = arith.cmpf ogt, %c, %zero_v : tensor<?xf32>
  %neg = arith.cmpf olt, %c, %zero_v : tensor<?xf32>
  %neg_or_zero = arith.select %neg, %minus_one_v, %zero_v : tensor<?xi1>, tensor<?xf32>
  %sign = arith.select %pos, %one_v, %neg_or_zero : tensor<?xi1>, tensor<?xf32>
  %lr_sign = arith.mulf %lr_v, %sign : tensor<?xf32>
  %p_new = arith.subf %p_decayed, %lr_sign : tensor<?xf32>
  %m_b2 = arith.mulf %exp_avg, %beta2_v : tensor<?xf32>
  %g_b2 = arith.mulf %grad, %omb2_v : tensor<?xf32>
  %m = arith.addf %m_b2, %g_b2 : tensor<?xf32>

  kfuse.write %p_new to %param : tensor<?xf32>
  kfuse.write %m to %exp_avg : tensor<?xf32>
  return
}
