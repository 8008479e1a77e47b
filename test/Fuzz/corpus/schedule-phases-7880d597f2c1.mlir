func.func @trust_ratio(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %m_new = arith.addf %m, %g : tensor<?xf32>
  %r = arith.mulf %m_new, %p : tensor<?xf32>
  %r_sq = arith.mulf %r, %r : tensor<?xf32>
  %norm_sq = kfuse.reduce <sum> %r_sq dim 0 : tensor<?xf32> -> f32
  %g_sq = arith.mulf %g, %g : tensor<?xf32>
  %g_norm_sq = kfuse.reduce <sum> %g_sq dim 0 : tensor<?xf32> -> f32
  %ratio = arith.divf %norm_sq, %g_norm_sq : f32
  %ratio_v = kfuse.broadcast %ratio like %p : f32, tensor<?xf32>
  %delta = arith.mulf %ratio_v, %r : tensor<?xf32>
  %p_new = arith.subf %p, %delta : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  kfuse.write %m_new to %m : tensor<?xf32>
  return
}
