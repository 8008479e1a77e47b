func.func @col_per_element(
    %p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %g_sq = arith.mulf %g, %g : tensor<?x?xf32>
  %col_sum = kfuse.reduce <sum> %g_sq dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %b = kfuse.broadcast %col_sum like %p : tensor<1x?xf32>, tensor<?x?xf32>
  %p_new = arith.subf %p, %b : tensor<?x?xf32>
  kfuse.write %p_new to %p : tensor<?x?xf32>
  return
}
