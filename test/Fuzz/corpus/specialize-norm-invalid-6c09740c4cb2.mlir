func.func @two_tensors(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}
