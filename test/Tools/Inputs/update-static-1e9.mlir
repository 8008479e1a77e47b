func.func @u(%p: tensor<1000000000xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
    %g: tensor<1000000000xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "g"}) attributes {kfuse.update} {
  %d = arith.subf %p, %g : tensor<1000000000xf32>
  kfuse.write %d to %p : tensor<1000000000xf32>
  return
}
