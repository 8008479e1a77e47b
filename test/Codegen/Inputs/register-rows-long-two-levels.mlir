// Rows of 2048 elements: two warps a row, a region of scratch per level.
// Two reductions of rows held in registers, the second of values that need
// the first: the update direction normalized by its row's RMS, then scaled
// down where its row's largest magnitude passes a bound.
func.func @row_normalized(
    %param: tensor<?x2048xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?x2048xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %bound: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "bound", kfuse.default = 2.0 : f32})
    attributes {kfuse.update} {
  %n = kfuse.dim_size %grad dim 1 : tensor<?x2048xf32> -> f32
  %sq = arith.mulf %grad, %grad : tensor<?x2048xf32>
  %ss = kfuse.reduce <sum> %sq dim 1 : tensor<?x2048xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %ss : f32, tensor<?x1xf32>
  %ms = arith.divf %ss, %n_r : tensor<?x1xf32>
  %rms = math.sqrt %ms : tensor<?x1xf32>
  %rms_e = kfuse.broadcast %rms like %grad : tensor<?x1xf32>, tensor<?x2048xf32>
  %u = arith.divf %grad, %rms_e : tensor<?x2048xf32>
  %u_abs = math.absf %u : tensor<?x2048xf32>
  %peak = kfuse.reduce <max> %u_abs dim 1 : tensor<?x2048xf32> -> tensor<?x1xf32>
  %bound_r = kfuse.broadcast %bound like %peak : f32, tensor<?x1xf32>
  %over = arith.divf %peak, %bound_r : tensor<?x1xf32>
  %one = arith.constant 1.0 : f32
  %one_r = kfuse.broadcast %one like %peak : f32, tensor<?x1xf32>
  %shrink = arith.maximumf %over, %one_r : tensor<?x1xf32>
  %shrink_e = kfuse.broadcast %shrink like %grad : tensor<?x1xf32>, tensor<?x2048xf32>
  %step = arith.divf %u, %shrink_e : tensor<?x2048xf32>
  %lr_e = kfuse.broadcast %lr like %grad : f32, tensor<?x2048xf32>
  %delta = arith.mulf %lr_e, %step : tensor<?x2048xf32>
  %new = arith.subf %param, %delta : tensor<?x2048xf32>
  kfuse.write %new to %param : tensor<?x2048xf32>
  return
}
