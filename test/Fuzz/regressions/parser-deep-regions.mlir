func.func @u(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
kfuse.fused {
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
  return
}
