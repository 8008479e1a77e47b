func.func @clipped(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %zero_v = kfuse.broadcast %zero like %param : f32, tensor<?xf32>
  %g2 = arith.mulf %grad, %grad : tensor<?xf32>
  %big = arith.cmpf ogt, %g2, %zero_v : tensor<?xf32>
  %step = arith.select %big, %grad, %zero_v : tensor<?xi1>, tensor<?xf32>
  %p_new = arith.subf %param, %step : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  return
}
