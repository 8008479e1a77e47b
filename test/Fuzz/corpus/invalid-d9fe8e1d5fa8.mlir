func.func @write_grad(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                      %g: tensor<4xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  kfuse.write %g to %p : tensor<4xf32>
  kfuse.write %p to %g : tensor<4xf32>
  return
}
