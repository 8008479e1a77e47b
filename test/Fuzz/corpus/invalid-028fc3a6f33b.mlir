func.func @returns(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>}) -> tensor<4xf32>
    attributes {kfuse.update} {
  return %p : tensor<4xf32>
}
