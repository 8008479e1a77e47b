func.func @unwritten_model(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                           %c: tensor<?xf32> {kfuse.role = #kfuse.role<model>, kfuse.name = "copy"})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
