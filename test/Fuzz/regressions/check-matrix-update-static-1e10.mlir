// A 2-D update of a static 100000 x 100000 param: kfuse check refuses it, over its budget.
func.func @static_rows(%p: tensor<100000x100000xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
                       %g: tensor<100000x100000xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
                       %r: tensor<100000x1xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "row_var"})
    attributes {kfuse.update} {
  %sq = arith.mulf %g, %g : tensor<100000x100000xf32>
  %rows = kfuse.reduce <sum> %sq dim 1 : tensor<100000x100000xf32> -> tensor<100000x1xf32>
  %r_new = arith.addf %r, %rows : tensor<100000x1xf32>
  %r_b = kfuse.broadcast %r_new like %p : tensor<100000x1xf32>, tensor<100000x100000xf32>
  %one = arith.constant 1.0 : f32
  %one_b = kfuse.broadcast %one like %p : f32, tensor<100000x100000xf32>
  %den = arith.addf %r_b, %one_b : tensor<100000x100000xf32>
  %step = arith.divf %g, %den : tensor<100000x100000xf32>
  %p_new = arith.subf %p, %step : tensor<100000x100000xf32>
  kfuse.write %p_new to %p : tensor<100000x100000xf32>
  kfuse.write %r_new to %r : tensor<100000x1xf32>
  return
}
