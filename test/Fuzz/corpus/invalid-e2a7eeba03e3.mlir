func.func @reduce_rank(%x: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  %s = kfuse.reduce <sum> %x dim 0 : tensor<?xf32> -> tensor<1xf32>
  kfuse.write %x to %x : tensor<?xf32>
  return
}
