func.func @write_type(%p: tensor<4xbf16> {kfuse.role = #kfuse.role<param>}, %v: tensor<4xf32>) {
  "kfuse.write"(%v, %p) : (tensor<4xf32>, tensor<4xbf16>) -> ()
  return
}
