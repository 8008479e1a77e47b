func.func @n(%x: tensor<?x?x?xf32> {kfuse.role = #kfuse.role<input>}, %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  return
}
