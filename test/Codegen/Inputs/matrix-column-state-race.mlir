func.func @col_write_race(
    %p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %c: tensor<1x?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "col_var"})
    attributes {kfuse.update} {
  %c_new = arith.addf %c, %c : tensor<1x?xf32>
  %b = kfuse.broadcast %c like %p : tensor<1x?xf32>, tensor<?x?xf32>
  %p_new = arith.mulf %p, %b : tensor<?x?xf32>
  kfuse.write %p_new to %p : tensor<?x?xf32>
  kfuse.write %c_new to %c : tensor<1x?xf32>
  return
}
