func.func @atan_norm(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"})
    attributes {kfuse.norm} {
  %a = math.atan %x : tensor<?x?xf32>
  kfuse.write %a to %y : tensor<?x?xf32>
  return
}
