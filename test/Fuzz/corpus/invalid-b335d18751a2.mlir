func.func @undeclared_state(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                            %s: tensor<4xf32>) {
  kfuse.write %p to %s : tensor<4xf32>
  return
}
