func.func @both(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update, kfuse.norm} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
