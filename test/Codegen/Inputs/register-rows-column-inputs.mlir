// Values per column read in a kernel whose rows are held in registers: the
// grad standardized per row as a LayerNorm standardizes it, scaled and
// shifted per column (states of 1 x 768 that this update reads only), then
// a step along it.
func.func @row_affine(
    %param: tensor<?x768xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?x768xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %gain: tensor<1x768xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "gain"},
    %shift: tensor<1x768xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "shift"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-5 : f32})
    attributes {kfuse.update} {
  %n = kfuse.dim_size %grad dim 1 : tensor<?x768xf32> -> f32
  %sum = kfuse.reduce <sum> %grad dim 1 : tensor<?x768xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %sum : f32, tensor<?x1xf32>
  %mean = arith.divf %sum, %n_r : tensor<?x1xf32>
  %var = kfuse.reduce <variance> %grad dim 1 : tensor<?x768xf32> -> tensor<?x1xf32>
  %eps_r = kfuse.broadcast %eps like %var : f32, tensor<?x1xf32>
  %var_eps = arith.addf %var, %eps_r : tensor<?x1xf32>
  %rstd = math.rsqrt %var_eps : tensor<?x1xf32>
  %mean_e = kfuse.broadcast %mean like %grad : tensor<?x1xf32>, tensor<?x768xf32>
  %rstd_e = kfuse.broadcast %rstd like %grad : tensor<?x1xf32>, tensor<?x768xf32>
  %gain_e = kfuse.broadcast %gain like %grad : tensor<1x768xf32>, tensor<?x768xf32>
  %shift_e = kfuse.broadcast %shift like %grad : tensor<1x768xf32>, tensor<?x768xf32>
  %centered = arith.subf %grad, %mean_e : tensor<?x768xf32>
  %xhat = arith.mulf %centered, %rstd_e : tensor<?x768xf32>
  %scaled = arith.mulf %xhat, %gain_e : tensor<?x768xf32>
  %u = arith.addf %scaled, %shift_e : tensor<?x768xf32>
  %lr_e = kfuse.broadcast %lr like %grad : f32, tensor<?x768xf32>
  %delta = arith.mulf %lr_e, %u : tensor<?x768xf32>
  %new = arith.subf %param, %delta : tensor<?x768xf32>
  kfuse.write %new to %param : tensor<?x768xf32>
  return
}
