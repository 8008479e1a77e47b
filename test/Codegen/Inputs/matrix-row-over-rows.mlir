func.func @row_own_dim(
    %p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "row_var"})
    attributes {kfuse.update} {
  %r2 = arith.mulf %r, %r : tensor<?x1xf32>
  %same = kfuse.reduce <sum> %r2 dim 1 : tensor<?x1xf32> -> tensor<?x1xf32>
  %b = kfuse.broadcast %same like %p : tensor<?x1xf32>, tensor<?x?xf32>
  %p_new = arith.subf %p, %b : tensor<?x?xf32>
  kfuse.write %p_new to %p : tensor<?x?xf32>
  return
}
