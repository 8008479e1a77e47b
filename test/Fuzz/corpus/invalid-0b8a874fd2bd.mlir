func.func @unwritten_param(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"})
    attributes {kfuse.update} {
  return
}
