func.func @u(%p: index {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  return
}
