func.func @sgd_momentum(
    %p: f32 {kfuse.role = #kfuse.role<param>},
    %g: f32 {kfuse.role = #kfuse.role<grad>},
    %buf: f32 {kfuse.role = #kfuse.role<state>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>},
    %mu: f32 {kfuse.role = #kfuse.role<hyper>}) attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %damp = arith.subf %one, %mu : f32
  %kept = arith.mulf %mu, %buf : f32
  %new = arith.mulf %damp, %g : f32
  %b = arith.addf %kept, %new : f32
  %step = arith.mulf %lr, %b : f32
  %step2 = arith.mulf %mu, %step : f32
  %p_new = arith.subf %p, %step2 : f32
  kfuse.write %p_new to %p : f32
  kfuse.write %b to %buf : f32
  return
}
