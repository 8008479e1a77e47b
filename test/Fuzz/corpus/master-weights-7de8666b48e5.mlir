func.func @has_model(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                     %c: tensor<?xf32> {kfuse.role = #kfuse.role<model>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  kfuse.write %p to %c : tensor<?xf32>
  return
}
