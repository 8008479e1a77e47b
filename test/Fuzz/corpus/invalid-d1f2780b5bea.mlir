func.func @fused_arg_type(%x: tensor<4xf32>) {
  %r = kfuse.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%e: bf16):
    %c = kfuse.convert %e : bf16 to f32
    kfuse.yield %c : f32
  }
  return
}
