func.func @reduce_shape(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                        %y: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  %s = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<1x?xf32>
  %t = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %t to %y : tensor<?x1xf32>
  return
}
