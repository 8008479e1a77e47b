func.func @norm_ops(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %w: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>},
    %s: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>},
    %m: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
  %sum = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %max = kfuse.reduce <max> %x dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %var = kfuse.reduce <variance> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %sum_b = kfuse.broadcast %sum like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %w_b = kfuse.broadcast %w like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %t = arith.mulf %sum_b, %w_b : tensor<?x?xf32>
  kfuse.write %t to %y : tensor<?x?xf32>
  %sum_var = arith.addf %sum, %var : tensor<?x1xf32>
  kfuse.write %sum_var to %s : tensor<?x1xf32>
  kfuse.write %max to %m : tensor<1x?xf32>
  return
}
