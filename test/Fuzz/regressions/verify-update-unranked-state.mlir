func.func @u(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %s: tensor<*xf32> {kfuse.role = #kfuse.role<state>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
