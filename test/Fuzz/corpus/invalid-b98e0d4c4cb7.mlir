func.func @norm_unwritten(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                          %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"}) attributes {kfuse.norm} {
  return
}
