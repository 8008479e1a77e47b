func.func @missing_role(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                        %g: tensor<4xf32>)
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<4xf32>
  return
}
