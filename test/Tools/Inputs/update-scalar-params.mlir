func.func @u(%a: f32 {kfuse.role = #kfuse.role<param>}, %b: f32 {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  return
}
