func.func @broken(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %x = arith.addf %p, : tensor<?xf32>
  return
}
