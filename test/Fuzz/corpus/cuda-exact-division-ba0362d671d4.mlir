func.func @roots(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                 %v: tensor<?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %s = math.sqrt %v : tensor<?xf32>
  %one = arith.constant 1.0 : f32
  %one_v = kfuse.broadcast %one like %p : f32, tensor<?xf32>
  %d = arith.addf %s, %one_v : tensor<?xf32>
  %q = arith.divf %p, %d : tensor<?xf32>
  %r = math.rsqrt %d : tensor<?xf32>
  %n = arith.addf %q, %r : tensor<?xf32>
  kfuse.write %n to %p : tensor<?xf32>
  return
}
