func.func @u(%p: complex<f32> {kfuse.role = #kfuse.role<param>}, %q: tensor<4xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  return
}
