func.func @shape_mismatch(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                          %g: tensor<8xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<4xf32>
  return
}
