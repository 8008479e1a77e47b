func.func @wide(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                %s1: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s2: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s3: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s4: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s5: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s6: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s7: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
                %s8: tensor<?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}
