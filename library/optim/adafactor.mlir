// Adafactor (Shazeer and Stern, 2018) for a 2-D param, as
// torch.optim.Adafactor: the second moment is factored into one value per
// row (row_var, rows x 1) and one per column (col_var, 1 x columns).
//
//   b       = t^beta2_decay                  (one minus beta2 at step t)
//   rho     = min(lr, 1 / sqrt(t))
//   alpha   = max(eps2, RMS(p)) * rho        (p before the decay)
//   R       <- lerp(R, mean_j g^2, b)        (per row)
//   C       <- lerp(C, mean_i g^2, b)        (per column)
//   V       = R C / max(mean_i R, eps1)
//   u       = g / sqrt(max(V, eps1^2))
//   p       <- p (1 - lr wd) - alpha / max(1, RMS(u) / d) * u
//
// eps1 is the param dtype's machine epsilon in torch (None), 2^-23 here for
// f32. The values per tensor (RMS, the mean of R) are 1 x 1 tensors.
func.func @adafactor(
    %param: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %row_var: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "row_var"},
    %col_var: tensor<1x?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "col_var"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %beta2_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta2_decay", kfuse.default = -0.8 : f32},
    %eps1: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps1", kfuse.default = 1.1920929e-07 : f32},
    %eps2: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps2", kfuse.default = 1.0e-3 : f32},
    %d: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "d", kfuse.default = 1.0 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %b = math.powf %step, %beta2_decay : f32
  %root_t = math.sqrt %step : f32
  %inv_root_t = arith.divf %one, %root_t : f32
  %rho = arith.minimumf %lr, %inv_root_t : f32
  %lr_wd = arith.mulf %lr, %weight_decay : f32
  %decay = arith.subf %one, %lr_wd : f32
  %eps1_sq = arith.mulf %eps1, %eps1 : f32
  %rows = kfuse.dim_size %param dim 0 : tensor<?x?xf32> -> f32
  %cols = kfuse.dim_size %param dim 1 : tensor<?x?xf32> -> f32
  %numel = arith.mulf %rows, %cols : f32

  // RMS of the param, one per tensor (1 x 1).
  %p_sq = arith.mulf %param, %param : tensor<?x?xf32>
  %p_row_sq = kfuse.reduce <sum> %p_sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %p_sum_sq = kfuse.reduce <sum> %p_row_sq dim 0 : tensor<?x1xf32> -> tensor<1x1xf32>
  %numel_t = kfuse.broadcast %numel like %p_sum_sq : f32, tensor<1x1xf32>
  %p_ms = arith.divf %p_sum_sq, %numel_t : tensor<1x1xf32>
  %p_rms = math.sqrt %p_ms : tensor<1x1xf32>
  %eps2_t = kfuse.broadcast %eps2 like %p_rms : f32, tensor<1x1xf32>
  %rho_t = kfuse.broadcast %rho like %p_rms : f32, tensor<1x1xf32>
  %scale = arith.maximumf %eps2_t, %p_rms : tensor<1x1xf32>
  %alpha = arith.mulf %scale, %rho_t : tensor<1x1xf32>

  // The factored second moment.
  %g_sq = arith.mulf %grad, %grad : tensor<?x?xf32>
  %row_sum = kfuse.reduce <sum> %g_sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %col_sum = kfuse.reduce <sum> %g_sq dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %cols_r = kfuse.broadcast %cols like %row_sum : f32, tensor<?x1xf32>
  %rows_c = kfuse.broadcast %rows like %col_sum : f32, tensor<1x?xf32>
  %row_mean = arith.divf %row_sum, %cols_r : tensor<?x1xf32>
  %col_mean = arith.divf %col_sum, %rows_c : tensor<1x?xf32>
  // lerp as torch computes it: from the nearer end, exact at b = 1.
  %half = arith.constant 0.5 : f32
  %near_start = arith.cmpf olt, %b, %half : f32
  %one_minus_b = arith.subf %one, %b : f32
  %from = arith.select %near_start, %b, %one_minus_b : f32
  %from_r = kfuse.broadcast %from like %row_sum : f32, tensor<?x1xf32>
  %from_c = kfuse.broadcast %from like %col_sum : f32, tensor<1x?xf32>
  %near_r = kfuse.broadcast %near_start like %row_sum : i1, tensor<?x1xf32>
  %near_c = kfuse.broadcast %near_start like %col_sum : i1, tensor<1x?xf32>
  %row_step = arith.subf %row_mean, %row_var : tensor<?x1xf32>
  %row_move = arith.mulf %from_r, %row_step : tensor<?x1xf32>
  %row_up = arith.addf %row_var, %row_move : tensor<?x1xf32>
  %row_down = arith.subf %row_mean, %row_move : tensor<?x1xf32>
  %row_new = arith.select %near_r, %row_up, %row_down : tensor<?x1xi1>, tensor<?x1xf32>
  %col_step = arith.subf %col_mean, %col_var : tensor<1x?xf32>
  %col_move = arith.mulf %from_c, %col_step : tensor<1x?xf32>
  %col_up = arith.addf %col_var, %col_move : tensor<1x?xf32>
  %col_down = arith.subf %col_mean, %col_move : tensor<1x?xf32>
  %col_new = arith.select %near_c, %col_up, %col_down : tensor<1x?xi1>, tensor<1x?xf32>
  %row_total = kfuse.reduce <sum> %row_new dim 0 : tensor<?x1xf32> -> tensor<1x1xf32>
  %rows_t = kfuse.broadcast %rows like %row_total : f32, tensor<1x1xf32>
  %row_avg = arith.divf %row_total, %rows_t : tensor<1x1xf32>
  %eps1_t = kfuse.broadcast %eps1 like %row_avg : f32, tensor<1x1xf32>
  %row_avg_safe = arith.maximumf %row_avg, %eps1_t : tensor<1x1xf32>

  // The update direction and its RMS, one per tensor.
  %row_b = kfuse.broadcast %row_new like %param : tensor<?x1xf32>, tensor<?x?xf32>
  %col_b = kfuse.broadcast %col_new like %param : tensor<1x?xf32>, tensor<?x?xf32>
  %avg_b = kfuse.broadcast %row_avg_safe like %param : tensor<1x1xf32>, tensor<?x?xf32>
  %outer = arith.mulf %row_b, %col_b : tensor<?x?xf32>
  %var = arith.divf %outer, %avg_b : tensor<?x?xf32>
  %eps1_sq_b = kfuse.broadcast %eps1_sq like %param : f32, tensor<?x?xf32>
  %var_safe = arith.maximumf %var, %eps1_sq_b : tensor<?x?xf32>
  %inv_root = math.rsqrt %var_safe : tensor<?x?xf32>
  %u = arith.mulf %grad, %inv_root : tensor<?x?xf32>
  %u_sq = arith.mulf %u, %u : tensor<?x?xf32>
  %u_row_sq = kfuse.reduce <sum> %u_sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %u_sum_sq = kfuse.reduce <sum> %u_row_sq dim 0 : tensor<?x1xf32> -> tensor<1x1xf32>
  %u_ms = arith.divf %u_sum_sq, %numel_t : tensor<1x1xf32>
  %u_rms = math.sqrt %u_ms : tensor<1x1xf32>
  %d_t = kfuse.broadcast %d like %u_rms : f32, tensor<1x1xf32>
  %one_t = kfuse.broadcast %one like %u_rms : f32, tensor<1x1xf32>
  %u_ratio = arith.divf %u_rms, %d_t : tensor<1x1xf32>
  %denom = arith.maximumf %one_t, %u_ratio : tensor<1x1xf32>
  %step_size = arith.divf %alpha, %denom : tensor<1x1xf32>

  %step_b = kfuse.broadcast %step_size like %param : tensor<1x1xf32>, tensor<?x?xf32>
  %decay_b = kfuse.broadcast %decay like %param : f32, tensor<?x?xf32>
  %p_decayed = arith.mulf %param, %decay_b : tensor<?x?xf32>
  %delta = arith.mulf %step_b, %u : tensor<?x?xf32>
  %p_new = arith.subf %p_decayed, %delta : tensor<?x?xf32>
  kfuse.write %p_new to %param : tensor<?x?xf32>
  kfuse.write %row_new to %row_var : tensor<?x1xf32>
  kfuse.write %col_new to %col_var : tensor<1x?xf32>
  return
}
