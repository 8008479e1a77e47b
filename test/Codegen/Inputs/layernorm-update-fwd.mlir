// LayerNorm forward written as a 2-D update with rows of 1024: inputs and
// outputs are arguments of an update as params, grads and states are (the
// one function form), the row's mean and variance are reduced in registers
// and the weight and bias are values per column. It runs as a multi-tensor
// plan (any number of tensors in one launch), as library/norm/layernorm_fwd.mlir
// computes it for one.
func.func @layernorm_fwd(
    %x: tensor<?x1024xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x1024xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %bias: tensor<1x1024xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "bias"},
    %y: tensor<?x1024xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %mean: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "mean"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "rstd"},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-5 : f32})
    attributes {kfuse.update} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x1024xf32> -> f32
  %sum = kfuse.reduce <sum> %x dim 1 : tensor<?x1024xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %sum : f32, tensor<?x1xf32>
  %mu = arith.divf %sum, %n_r : tensor<?x1xf32>
  %mu_b = kfuse.broadcast %mu like %x : tensor<?x1xf32>, tensor<?x1024xf32>
  %xc = arith.subf %x, %mu_b : tensor<?x1024xf32>
  %var = kfuse.reduce <variance> %x dim 1 : tensor<?x1024xf32> -> tensor<?x1xf32>
  %eps_r = kfuse.broadcast %eps like %var : f32, tensor<?x1xf32>
  %var_eps = arith.addf %var, %eps_r : tensor<?x1xf32>
  %rs = math.rsqrt %var_eps : tensor<?x1xf32>
  %rs_b = kfuse.broadcast %rs like %x : tensor<?x1xf32>, tensor<?x1024xf32>
  %xhat = arith.mulf %xc, %rs_b : tensor<?x1024xf32>
  %w_b = kfuse.broadcast %weight like %x : tensor<1x1024xf32>, tensor<?x1024xf32>
  %b_b = kfuse.broadcast %bias like %x : tensor<1x1024xf32>, tensor<?x1024xf32>
  %scaled = arith.mulf %xhat, %w_b : tensor<?x1024xf32>
  %out = arith.addf %scaled, %b_b : tensor<?x1024xf32>
  kfuse.write %out to %y : tensor<?x1024xf32>
  kfuse.write %mu to %mean : tensor<?x1xf32>
  kfuse.write %rs to %rstd : tensor<?x1xf32>
  return
}
