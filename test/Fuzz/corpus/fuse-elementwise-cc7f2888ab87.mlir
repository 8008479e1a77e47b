func.func @copy(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                %g: tensor<4xf32> {kfuse.role = #kfuse.role<grad>},
                %s: tensor<4xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %z = kfuse.broadcast %zero like %p : f32, tensor<4xf32>
  kfuse.write %g to %p : tensor<4xf32>
  kfuse.write %z to %s : tensor<4xf32>
  return
}
