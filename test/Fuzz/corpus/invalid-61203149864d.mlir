func.func @write_twice(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<4xf32>
  kfuse.write %p to %p : tensor<4xf32>
  return
}
