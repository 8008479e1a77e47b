func.func @numel_multiple() attributes {kfuse.numel_multiple = 12 : i64} {
  return
}
