func.func @norm_writes_input(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                             %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  kfuse.write %x to %x : tensor<?x?xf32>
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}
