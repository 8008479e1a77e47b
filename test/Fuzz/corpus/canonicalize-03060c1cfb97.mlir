func.func @dim_size_static(
    %x: tensor<?x4096xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x4096xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x4096xf32> -> f32
  %n_b = kfuse.broadcast %n like %x : f32, tensor<?x4096xf32>
  %s = arith.mulf %x, %n_b : tensor<?x4096xf32>
  kfuse.write %s to %y : tensor<?x4096xf32>
  return
}
