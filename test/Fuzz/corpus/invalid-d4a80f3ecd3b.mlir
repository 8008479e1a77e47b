func.func @dim_size_range(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                          %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 2 : tensor<?x?xf32> -> f32
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}
