func.func @round_trip(%p: tensor<4xbf16> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %w = kfuse.convert %p : tensor<4xbf16> to tensor<4xf32>
  %n = kfuse.convert %w : tensor<4xf32> to tensor<4xbf16>
  %s = kfuse.convert %n : tensor<4xbf16> to tensor<4xbf16>
  kfuse.write %s to %p : tensor<4xbf16>
  return
}
