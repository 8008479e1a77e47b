func.func @rmsnorm_bwd(
    %dy: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "dy"},
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "rstd"},
    %weight: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %dx: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "dx"},
    %dweight: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "dweight"})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
  %rs_b = kfuse.broadcast %rstd like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %w_b = kfuse.broadcast %weight like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %xhat = arith.mulf %x, %rs_b : tensor<?x?xf32>
  %g = arith.mulf %dy, %w_b : tensor<?x?xf32>
  %g_xhat = arith.mulf %g, %xhat : tensor<?x?xf32>
  %sum_g_xhat = kfuse.reduce <sum> %g_xhat dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %sum_g_xhat : f32, tensor<?x1xf32>
  %c1 = arith.divf %sum_g_xhat, %n_r : tensor<?x1xf32>
  %c1_b = kfuse.broadcast %c1 like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %xhat_c1 = arith.mulf %xhat, %c1_b : tensor<?x?xf32>
  %g_centered = arith.subf %g, %xhat_c1 : tensor<?x?xf32>
  %dx_value = arith.mulf %g_centered, %rs_b : tensor<?x?xf32>
  %dy_xhat = arith.mulf %dy, %xhat : tensor<?x?xf32>
  %dweight_value = kfuse.reduce <sum> %dy_xhat dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  kfuse.write %dx_value to %dx : tensor<?x?xf32>
  kfuse.write %dweight_value to %dweight : tensor<1x?xf32>
  return
}
