func.func @mix(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>}, %s: f32 {kfuse.role = #kfuse.role<state>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?x?xf32>
  return
}
