func.func @reduce_kind(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                       %m: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  %s = kfuse.reduce <mean> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %s to %m : tensor<?x1xf32>
  return
}
