func.func @half_kinds(%p: tensor<4xf16> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %b = kfuse.convert %p : tensor<4xf16> to tensor<4xbf16>
  %h = kfuse.convert %b : tensor<4xbf16> to tensor<4xf16>
  kfuse.write %h to %p : tensor<4xf16>
  return
}
