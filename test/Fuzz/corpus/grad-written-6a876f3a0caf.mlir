func.func @bad(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
               %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  kfuse.write %g to %p : tensor<?xf32>
  kfuse.write %p to %g : tensor<?xf32>
  return
}
