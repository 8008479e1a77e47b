func.func @input_rank(%x: tensor<?xf32> {kfuse.role = #kfuse.role<input>}) {
  return
}
