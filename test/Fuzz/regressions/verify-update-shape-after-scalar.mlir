func.func @u(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %g: f32 {kfuse.role = #kfuse.role<grad>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
