func.func @reduce_dim(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                      %y: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  %s = kfuse.reduce <sum> %x dim 2 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %s to %y : tensor<?x1xf32>
  return
}
