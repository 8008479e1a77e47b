func.func @write_non_argument(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>}) {
  %n = arith.addf %p, %p : tensor<4xf32>
  kfuse.write %p to %n : tensor<4xf32>
  return
}
