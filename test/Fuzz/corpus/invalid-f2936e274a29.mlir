func.func @fused_tensor_body(%x: tensor<4xf32>, %t: tensor<4xf32>) {
  %r = kfuse.fused(%x, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %z = arith.constant dense<0.0> : tensor<4xf32>
    kfuse.yield %a : f32
  }
  return
}
