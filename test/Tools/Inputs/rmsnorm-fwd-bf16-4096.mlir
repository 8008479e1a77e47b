// rmsnorm_fwd as kfuse-specialize makes it for bf16 x, weight and y and
// 4096 columns: static row length, dim_size folded, converts on 2-D tensors.
func.func @rmsnorm_fwd(
    %x: tensor<?x4096xbf16> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x4096xbf16> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %y: tensor<?x4096xbf16> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "rstd"},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-6 : f32})
    attributes {kfuse.norm, kfuse.alignment = 16 : i64, kfuse.vector_width = 8 : i64} {
  %n = arith.constant 4.096000e+03 : f32
  %xf = kfuse.convert %x : tensor<?x4096xbf16> to tensor<?x4096xf32>
  %wf = kfuse.convert %weight : tensor<1x4096xbf16> to tensor<1x4096xf32>
  %x_sq = arith.mulf %xf, %xf : tensor<?x4096xf32>
  %ssq = kfuse.reduce <sum> %x_sq dim 1 : tensor<?x4096xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %ssq : f32, tensor<?x1xf32>
  %ms = arith.divf %ssq, %n_r : tensor<?x1xf32>
  %eps_r = kfuse.broadcast %eps like %ms : f32, tensor<?x1xf32>
  %ms_eps = arith.addf %ms, %eps_r : tensor<?x1xf32>
  %rs = math.rsqrt %ms_eps : tensor<?x1xf32>
  %rs_b = kfuse.broadcast %rs like %xf : tensor<?x1xf32>, tensor<?x4096xf32>
  %xhat = arith.mulf %xf, %rs_b : tensor<?x4096xf32>
  %w_b = kfuse.broadcast %wf like %xf : tensor<1x4096xf32>, tensor<?x4096xf32>
  %out = arith.mulf %xhat, %w_b : tensor<?x4096xf32>
  %out_bf16 = kfuse.convert %out : tensor<?x4096xf32> to tensor<?x4096xbf16>
  kfuse.write %out_bf16 to %y : tensor<?x4096xbf16>
  kfuse.write %rs to %rstd : tensor<?x1xf32>
  return
}
