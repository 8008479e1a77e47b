func.func @static(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<8xf32>
  return
}
