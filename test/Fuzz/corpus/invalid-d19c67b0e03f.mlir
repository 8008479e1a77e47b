func.func @vector_width() attributes {kfuse.vector_width = 3 : i64} {
  return
}
