func.func @bf16_state(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
    %m: tensor<?xbf16> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %m_f32 = kfuse.convert %m : tensor<?xbf16> to tensor<?xf32>
  %m_new = arith.addf %m_f32, %p : tensor<?xf32>
  %stored = kfuse.convert %m_new : tensor<?xf32> to tensor<?xbf16>
  %sq = arith.mulf %m_new, %m_new : tensor<?xf32>
  %sum = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %sum_v = kfuse.broadcast %sum like %p : f32, tensor<?xf32>
  %scaled = arith.mulf %sum_v, %m_new : tensor<?xf32>
  kfuse.write %scaled to %p : tensor<?xf32>
  kfuse.write %stored to %m : tensor<?xbf16>
  return
}
