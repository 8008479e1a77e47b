func.func @convert_rank(%x: tensor<4xf32>) {
  %c = "kfuse.convert"(%x) : (tensor<4xf32>) -> bf16
  return
}
