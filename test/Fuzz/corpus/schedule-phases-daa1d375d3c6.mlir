func.func @scalar_ladder(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %sq = arith.mulf %g, %g : tensor<?xf32>
  %s0 = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %s1 = arith.addf %s0, %s0 : f32
  %s2 = arith.addf %s1, %s1 : f32
  %s3 = arith.addf %s2, %s2 : f32
  %s4 = arith.addf %s3, %s3 : f32
  %s5 = arith.addf %s4, %s4 : f32
  %s6 = arith.addf %s5, %s5 : f32
  %s7 = arith.addf %s6, %s6 : f32
  %s8 = arith.addf %s7, %s7 : f32
  %s9 = arith.addf %s8, %s8 : f32
  %s10 = arith.addf %s9, %s9 : f32
  %s11 = arith.addf %s10, %s10 : f32
  %s12 = arith.addf %s11, %s11 : f32
  %s13 = arith.addf %s12, %s12 : f32
  %s14 = arith.addf %s13, %s13 : f32
  %s15 = arith.addf %s14, %s14 : f32
  %s16 = arith.addf %s15, %s15 : f32
  %s17 = arith.addf %s16, %s16 : f32
  %s18 = arith.addf %s17, %s17 : f32
  %s19 = arith.addf %s18, %s18 : f32
  %s20 = arith.addf %s19, %s19 : f32
  %s21 = arith.addf %s20, %s20 : f32
  %s22 = arith.addf %s21, %s21 : f32
  %s23 = arith.addf %s22, %s22 : f32
  %s24 = arith.addf %s23, %s23 : f32
  %s25 = arith.addf %s24, %s24 : f32
  %s26 = arith.addf %s25, %s25 : f32
  %s27 = arith.addf %s26, %s26 : f32
  %s28 = arith.addf %s27, %s27 : f32
  %s29 = arith.addf %s28, %s28 : f32
  %s30 = arith.addf %s29, %s29 : f32
  %s31 = arith.addf %s30, %s30 : f32
  %s32 = arith.addf %s31, %s31 : f32
  %s33 = arith.addf %s32, %s32 : f32
  %s34 = arith.addf %s33, %s33 : f32
  %s35 = arith.addf %s34, %s34 : f32
  %s36 = arith.addf %s35, %s35 : f32
  %s37 = arith.addf %s36, %s36 : f32
  %s38 = arith.addf %s37, %s37 : f32
  %s39 = arith.addf %s38, %s38 : f32
  %s40 = arith.addf %s39, %s39 : f32
  %v = kfuse.broadcast %s40 like %p : f32, tensor<?xf32>
  %d = arith.mulf %v, %g : tensor<?xf32>
  %p_new = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}
