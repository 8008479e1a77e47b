func.func @no_param(%g: tensor<4xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  return
}
