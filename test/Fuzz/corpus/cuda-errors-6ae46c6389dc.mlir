func.func @wave(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"})
    attributes {kfuse.update} {
  %s = math.sin %param : tensor<?xf32>
  kfuse.write %s to %param : tensor<?xf32>
  return
}
