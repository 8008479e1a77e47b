func.func @sign_step(
    %p: bf16 {kfuse.role = #kfuse.role<param>},
    %g: bf16 {kfuse.role = #kfuse.role<grad>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>}) attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %on = arith.cmpf ogt, %lr, %zero : f32
  %gf = arith.extf %g : bf16 to f32
  %pos = arith.cmpf ogt, %gf, %zero : f32
  %both = arith.andi %pos, %on : i1
  %d = arith.select %both, %lr, %zero : f32
  %pf = arith.extf %p : bf16 to f32
  %pn = arith.subf %pf, %d : f32
  %p_new = arith.truncf %pn : f32 to bf16
  kfuse.write %p_new to %p : bf16
  return
}
