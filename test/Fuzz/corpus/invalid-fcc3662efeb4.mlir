func.func @multi_not_update() attributes {kfuse.multi_tensor} {
  return
}
