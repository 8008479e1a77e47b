func.func @string_role(%p: tensor<4xf32> {kfuse.role = "param"}) {
  return
}
