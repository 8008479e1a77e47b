func.func @mixed(%p: tensor<8xbf16> {kfuse.role = #kfuse.role<param>},
                 %m: tensor<8xf32> {kfuse.role = #kfuse.role<state>},
                 %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update, kfuse.vector_width = 8 : i64, kfuse.index_bits = 32 : i64, kfuse.alignment = 16 : i64} {
  %r:2 = kfuse.fused(%p, %m, %lr) : (tensor<8xbf16>, tensor<8xf32>, f32) -> (tensor<8xbf16>, tensor<8xf32>) {
  ^bb0(%pe: bf16, %me: f32, %lre: f32):
    %pc = kfuse.convert %pe : bf16 to f32
    %d = arith.mulf %lre, %me : f32
    %n = arith.subf %pc, %d : f32
    %nb = kfuse.convert %n : f32 to bf16
    kfuse.yield %nb, %me : bf16, f32
  }
  kfuse.write %r#0 to %p : tensor<8xbf16>
  kfuse.write %r#1 to %m : tensor<8xf32>
  return
}
