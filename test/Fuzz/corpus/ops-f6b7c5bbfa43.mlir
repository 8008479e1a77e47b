func.func @convert_and_select(%p: tensor<4xf16> {kfuse.role = #kfuse.role<param>},
                              %flag: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %c = arith.cmpf ogt, %flag, %zero : f32
  %pc = kfuse.convert %p : tensor<4xf16> to tensor<4xf32>
  %cv = kfuse.broadcast %c like %pc : i1, tensor<4xf32>
  %neg = arith.negf %pc : tensor<4xf32>
  %s = arith.select %cv, %pc, %neg : tensor<4xi1>, tensor<4xf32>
  %sb = kfuse.convert %s : tensor<4xf32> to tensor<4xf16>
  kfuse.write %sb to %p : tensor<4xf16>
  return
}
