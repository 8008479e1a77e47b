func.func @rmsnorm_offset(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-6 : f32})
    attributes {kfuse.norm} {
  %one = arith.constant 1.0 : f32
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
  %one_c = kfuse.broadcast %one like %weight : f32, tensor<1x?xf32>
  %scale = arith.addf %weight, %one_c : tensor<1x?xf32>
  %scale_b = kfuse.broadcast %scale like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %out = arith.mulf %xhat, %scale_b : tensor<?x?xf32>
  kfuse.write %out to %y : tensor<?x?xf32>
  return
}
