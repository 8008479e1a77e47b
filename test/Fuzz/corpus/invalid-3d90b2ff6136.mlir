func.func @read_model(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                      %c: tensor<?xf32> {kfuse.role = #kfuse.role<model>})
    attributes {kfuse.update} {
  %s = arith.addf %p, %c : tensor<?xf32>
  kfuse.write %s to %p : tensor<?xf32>
  kfuse.write %p to %c : tensor<?xf32>
  return
}
