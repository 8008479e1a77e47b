func.func @deferred_norm(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %g_sq = arith.mulf %g, %g : tensor<?xf32>
  %g_norm_sq = kfuse.reduce <sum> %g_sq dim 0 over list : tensor<?xf32> -> f32
  %p_sq = arith.mulf %p, %p : tensor<?xf32>
  %p_norm_sq = kfuse.reduce <sum> %p_sq dim 0 : tensor<?xf32> -> f32
  %scale = kfuse.broadcast %g_norm_sq like %g : f32, tensor<?xf32>
  %u0 = arith.mulf %g, %scale : tensor<?xf32>
  %u = arith.addf %u0, %p : tensor<?xf32>
  %u_sq = arith.mulf %u, %u : tensor<?xf32>
  %u_norm_sq = kfuse.reduce <sum> %u_sq dim 0 : tensor<?xf32> -> f32
  %ratio = arith.divf %p_norm_sq, %u_norm_sq : f32
  %ratio_v = kfuse.broadcast %ratio like %p : f32, tensor<?xf32>
  %d = arith.mulf %ratio_v, %u : tensor<?xf32>
  %p_new = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}
