func.func @three_tensors(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %w: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}
