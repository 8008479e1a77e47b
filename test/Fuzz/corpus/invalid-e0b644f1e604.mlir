func.func @fused_shapes(%x: tensor<4xf32>, %y: tensor<8xf32>) {
  %r = kfuse.fused(%x, %y) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    kfuse.yield %a : f32
  }
  return
}
