func.func @fused_yield_count(%x: tensor<4xf32>) {
  %r = kfuse.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    kfuse.yield %a, %a : f32, f32
  }
  return
}
