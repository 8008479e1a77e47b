func.func @scalar_grad(%g: f32 {kfuse.role = #kfuse.role<grad>}) {
  return
}
