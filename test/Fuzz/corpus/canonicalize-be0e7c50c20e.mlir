func.func @lossy(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %n = kfuse.convert %p : tensor<4xf32> to tensor<4xbf16>
  %w = kfuse.convert %n : tensor<4xbf16> to tensor<4xf32>
  kfuse.write %w to %p : tensor<4xf32>
  return
}
