// Rows of 4096 elements: four warps a row, their parts combined through
// shared memory. A row's mean and variance reduced in registers, in one stage: the grad
// normalized per row as a LayerNorm normalizes (biased variance, Chan's
// merge of the lanes' parts), then a step along it.
func.func @row_standardized(
    %param: tensor<?x4096xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?x4096xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-5 : f32})
    attributes {kfuse.update} {
  %n = kfuse.dim_size %grad dim 1 : tensor<?x4096xf32> -> f32
  %sum = kfuse.reduce <sum> %grad dim 1 : tensor<?x4096xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %sum : f32, tensor<?x1xf32>
  %mean = arith.divf %sum, %n_r : tensor<?x1xf32>
  %var = kfuse.reduce <variance> %grad dim 1 : tensor<?x4096xf32> -> tensor<?x1xf32>
  %eps_r = kfuse.broadcast %eps like %var : f32, tensor<?x1xf32>
  %var_eps = arith.addf %var, %eps_r : tensor<?x1xf32>
  %rstd = math.rsqrt %var_eps : tensor<?x1xf32>
  %mean_e = kfuse.broadcast %mean like %grad : tensor<?x1xf32>, tensor<?x4096xf32>
  %rstd_e = kfuse.broadcast %rstd like %grad : tensor<?x1xf32>, tensor<?x4096xf32>
  %centered = arith.subf %grad, %mean_e : tensor<?x4096xf32>
  %u = arith.mulf %centered, %rstd_e : tensor<?x4096xf32>
  %lr_e = kfuse.broadcast %lr like %grad : f32, tensor<?x4096xf32>
  %delta = arith.mulf %lr_e, %u : tensor<?x4096xf32>
  %new = arith.subf %param, %delta : tensor<?x4096xf32>
  kfuse.write %new to %param : tensor<?x4096xf32>
  return
}
