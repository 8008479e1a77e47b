func.func @taken(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                 %s: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "inv_scale"})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
