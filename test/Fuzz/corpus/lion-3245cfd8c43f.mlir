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
