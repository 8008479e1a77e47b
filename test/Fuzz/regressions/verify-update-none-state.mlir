func.func @u(%s: none {kfuse.role = #kfuse.role<state>}, %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
