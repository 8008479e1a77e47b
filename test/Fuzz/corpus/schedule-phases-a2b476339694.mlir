func.func @one_phase(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %p_new = arith.subf %p, %g : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}
