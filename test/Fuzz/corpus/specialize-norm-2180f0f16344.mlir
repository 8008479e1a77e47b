func.func @sgd(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
               %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  %n = arith.subf %p, %g : tensor<?xf32>
  kfuse.write %n to %p : tensor<?xf32>
  return
}
