func.func @fused_yield_type(%x: tensor<4xf32>) {
  %r = kfuse.fused(%x) : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: f32):
    kfuse.yield %a : f32
  }
  return
}
