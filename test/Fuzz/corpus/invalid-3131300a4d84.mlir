func.func @tensor_hyper(%h: tensor<4xf32> {kfuse.role = #kfuse.role<hyper>}) {
  return
}
