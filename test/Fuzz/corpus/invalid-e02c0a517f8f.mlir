func.func @norm_param(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                      %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.norm} {
  return
}
