// LayerNorm backward from the saved row statistics:
//
//   xhat    = (x - mean) * rstd
//   g       = dy * weight
//   dx      = (g - xhat * sum(g * xhat) / n - sum(g) / n) * rstd
//   dweight = sum over rows of dy * xhat
//   dbias   = sum over rows of dy
//
// Written as a 2-D update with rows of 1024 (the one function form): dx
// from two row sums in registers; dweight and dbias from each thread's
// column sums over its rows, the block's row slots and the chunks in order.
func.func @layernorm_bwd(
    %dy: tensor<?x1024xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "dy"},
    %x: tensor<?x1024xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %mean: tensor<?x1xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "mean"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "rstd"},
    %weight: tensor<1x1024xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %dx: tensor<?x1024xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "dx"},
    %dweight: tensor<1x1024xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "dweight"},
    %dbias: tensor<1x1024xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "dbias"})
    attributes {kfuse.update} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x1024xf32> -> f32
  %mu_b = kfuse.broadcast %mean like %x : tensor<?x1xf32>, tensor<?x1024xf32>
  %rs_b = kfuse.broadcast %rstd like %x : tensor<?x1xf32>, tensor<?x1024xf32>
  %w_b = kfuse.broadcast %weight like %x : tensor<1x1024xf32>, tensor<?x1024xf32>
  %xc = arith.subf %x, %mu_b : tensor<?x1024xf32>
  %xhat = arith.mulf %xc, %rs_b : tensor<?x1024xf32>
  %g = arith.mulf %dy, %w_b : tensor<?x1024xf32>
  %g_xhat = arith.mulf %g, %xhat : tensor<?x1024xf32>
  %sum_g_xhat = kfuse.reduce <sum> %g_xhat dim 1 : tensor<?x1024xf32> -> tensor<?x1xf32>
  %sum_g = kfuse.reduce <sum> %g dim 1 : tensor<?x1024xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %sum_g : f32, tensor<?x1xf32>
  %c1 = arith.divf %sum_g_xhat, %n_r : tensor<?x1xf32>
  %c2 = arith.divf %sum_g, %n_r : tensor<?x1xf32>
  %c1_b = kfuse.broadcast %c1 like %x : tensor<?x1xf32>, tensor<?x1024xf32>
  %c2_b = kfuse.broadcast %c2 like %x : tensor<?x1xf32>, tensor<?x1024xf32>
  %xhat_c1 = arith.mulf %xhat, %c1_b : tensor<?x1024xf32>
  %g_minus = arith.subf %g, %xhat_c1 : tensor<?x1024xf32>
  %g_centered = arith.subf %g_minus, %c2_b : tensor<?x1024xf32>
  %dx_value = arith.mulf %g_centered, %rs_b : tensor<?x1024xf32>
  %dy_xhat = arith.mulf %dy, %xhat : tensor<?x1024xf32>
  %dweight_value = kfuse.reduce <sum> %dy_xhat dim 0 : tensor<?x1024xf32> -> tensor<1x1024xf32>
  %dbias_value = kfuse.reduce <sum> %dy dim 0 : tensor<?x1024xf32> -> tensor<1x1024xf32>
  kfuse.write %dx_value to %dx : tensor<?x1024xf32>
  kfuse.write %dweight_value to %dweight : tensor<1x1024xf32>
  kfuse.write %dbias_value to %dbias : tensor<1x1024xf32>
  return
}
