func.func @matrix_update(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>},
                         %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>},
                         %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>},
                         %c: tensor<1x?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %sq = arith.mulf %g, %g : tensor<?x?xf32>
  %rows = kfuse.reduce <sum> %sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %cols = kfuse.reduce <sum> %sq dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %total = kfuse.reduce <sum> %rows dim 0 : tensor<?x1xf32> -> tensor<1x1xf32>
  %total_b = kfuse.broadcast %total like %p : tensor<1x1xf32>, tensor<?x?xf32>
  %p_new = arith.subf %p, %total_b : tensor<?x?xf32>
  kfuse.write %p_new to %p : tensor<?x?xf32>
  kfuse.write %rows to %r : tensor<?x1xf32>
  kfuse.write %cols to %c : tensor<1x?xf32>
  return
}
