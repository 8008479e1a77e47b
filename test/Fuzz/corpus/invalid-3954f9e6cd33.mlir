func.func @default_on_tensor(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>, kfuse.default = 1.0 : f32}) {
  return
}
