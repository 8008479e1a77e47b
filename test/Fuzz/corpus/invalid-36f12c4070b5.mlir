func.func @found_inf_without_scale(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update, kfuse.found_inf} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
