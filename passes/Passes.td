//===- Passes.td - kfuse passes ----------------------------*- tablegen -*-===//

#ifndef KFUSE_PASSES_TD
#define KFUSE_PASSES_TD

include "mlir/Pass/PassBase.td"

def LiftElementFormPass : Pass<"kfuse-lift-element-form", "mlir::func::FuncOp"> {
  let summary = "rewrite an element-form update on tensors";
  let description = [{
    An update may be written in element form: its `param`, `grad`, `state`
    and `model` arguments are float scalars, one element of each tensor, and
    its body is elementwise math on them and on the hypers, with no
    `kfuse.broadcast`. This pass makes it the tensor form every other pass
    and the code generator take. Those arguments become `tensor<?xT>`, and
    every op that reads a per-element value yields a tensor. A hyper or
    constant scalar that such an op reads is broadcast once, before its
    first such use. Ops on hypers alone stay scalar math, computed once per
    launch. Every kfuse source is lifted when it is loaded. The body may
    hold only elementwise ops (MLIR's `Tensorizable`: arith, math) and
    `kfuse.write`; anything else is an error at the op.

    ```mlir
    func.func @sgd(
        %p: f32 {kfuse.role = #kfuse.role<param>},
        %g: f32 {kfuse.role = #kfuse.role<grad>},
        %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.default = 1.0e-3 : f32})
        attributes {kfuse.update} {
      %d = arith.mulf %lr, %g : f32
      %p_new = arith.subf %p, %d : f32
      kfuse.write %p_new to %p : f32
      return
    }
    ```

    becomes

    ```mlir
    func.func @sgd(
        %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
        %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
        %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.default = 1.0e-3 : f32})
        attributes {kfuse.update} {
      %lr_v = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
      %d = arith.mulf %lr_v, %g : tensor<?xf32>
      %p_new = arith.subf %p, %d : tensor<?xf32>
      kfuse.write %p_new to %p : tensor<?xf32>
      return
    }
    ```
  }];
  let dependentDialects = ["::kfuse::KFuseDialect"];
}

def SpecializePass : Pass<"kfuse-specialize", "mlir::func::FuncOp"> {
  let summary = "bind storage dtypes and shape facts of an update or a norm";
  let description = [{
    Rewrites a kernel function (`kfuse.update` or `kfuse.norm`) for one
    specialization. Each tensor argument takes its storage element type and
    compute stays f32: a `kfuse.convert` to f32 follows each read of a
    narrower argument and one back precedes each write into it.

    Storage dtypes are per argument: `arg-dtypes` lists one per tensor
    argument, in argument order (f32, bf16 or f16). Without it, an update's
    roles give them (`param-dtype`, `grad-dtype`, defaulting to the params',
    `state-dtype`, `model-dtype`), and a norm's tensors are f32. States at
    the tensor level are f32 scalars and take none.

    Shape facts by kind:
    - A 1-D update: a known element count (`numel`) makes every tensor shape
      static, so that folding can use it; a dynamic one may come with a
      power of two it is a multiple of (`numel-multiple`, recorded as
      `kfuse.numel_multiple`): a multiple of the vector width needs no scalar
      tail loop. The pass records the vector width (elements per thread and
      iteration, for 16-byte accesses) and 32- or 64-bit indexing.
    - A norm: `cols`, the row length, is required and replaces every dynamic
      column extent, so `kfuse.dim_size ... dim 1` folds to a constant. The
      vector width is the elements per 16-byte access of the widest
      full-shape tensor, 1 when rows do not start on 16 bytes. With `cols=1`
      the column extent stays dynamic: a static 1 would make a full tensor
      read as a per-row one.
    - A 2-D update takes neither: its plan's table gives each tensor's shape.
    Every kind records `kfuse.alignment`, the bytes every pointer is aligned
    to.

    Example: `kfuse-specialize{param-dtype=bf16 numel-multiple=8}` on
    `func.func @sgd(%param: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, ...)`
    gives `%param: tensor<?xbf16>`, a `kfuse.convert` to f32 after it, and the
    attributes `kfuse.vector_width = 8`, `kfuse.index_bits = 64`,
    `kfuse.alignment = 16`, `kfuse.numel_multiple = 8`; and
    `kfuse-specialize{cols=4096 arg-dtypes=bf16,f32,bf16,bf16,f32,f32}` on a
    LayerNorm gives `%x: tensor<?x4096xbf16>` and `kfuse.vector_width = 8`.
  }];
  let options = [
    ListOption<"argDTypes", "arg-dtypes", "std::string",
               "storage dtype of each tensor argument in argument order (f32, "
               "bf16, f16); empty: by role">,
    Option<"paramDType", "param-dtype", "std::string", "\"f32\"",
           "an update's params' storage dtype without arg-dtypes">,
    Option<"gradDType", "grad-dtype", "std::string", "\"\"",
           "an update's grads' storage dtype without arg-dtypes (default: "
           "the param dtype)">,
    Option<"stateDType", "state-dtype", "std::string", "\"f32\"",
           "an update's optimizer states' storage dtype without arg-dtypes">,
    Option<"modelDType", "model-dtype", "std::string", "\"bf16\"",
           "an update's model copies' (master weights) storage dtype without "
           "arg-dtypes">,
    Option<"numel", "numel", "int64_t", "-1",
           "a 1-D update's element count of every tensor; -1 keeps it "
           "dynamic">,
    Option<"numelMultiple", "numel-multiple", "int64_t", "1",
           "a power of two a 1-D update's dynamic element count is a "
           "multiple of">,
    Option<"cols", "cols", "int64_t", "0",
           "a norm's row length (extent of dimension 1); required for norms, "
           "> 0">,
    Option<"alignment", "alignment", "int64_t", "16",
           "bytes every tensor pointer is aligned to (a power of two)">,
  ];
  let statistics = [
    Statistic<"numConverts", "converts", "storage/compute converts inserted">,
  ];
  let dependentDialects = ["::kfuse::KFuseDialect"];
}

def FuseElementwisePass : Pass<"kfuse-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "merge elementwise tensor math into kfuse.fused regions";
  let description = [{
    Groups the whole-tensor elementwise operations of an update (arith, math,
    kfuse.convert and kfuse.broadcast on tensors) into `kfuse.fused` regions,
    each of which becomes one kernel. Producers and consumers over the same
    elements are merged, and so are siblings; scalar operations that feed the
    group (bias corrections from hyperparameters) are cloned in, so that each
    region is isolated from above and reads only function arguments. A fused
    AdamW is exactly one region. `max-group-size` caps the number of
    operations in a region (1 gives one kernel per elementwise operation).
    A reduction over each row of rows held in registers (see
    kfuse-schedule-phases) joins the region that computes its input, as
    `kfuse.reduce ... dim 1 : f32 -> f32`, the element over its row.
  }];
  let options = [
    Option<"maxGroupSize", "max-group-size", "unsigned", "0",
           "most elementwise operations in one region (0: no limit)">,
  ];
  let statistics = [
    Statistic<"numRegions", "regions", "fused regions created">,
    Statistic<"numFusedOps", "fused-ops", "elementwise operations fused">,
  ];
  let dependentDialects = ["::kfuse::KFuseDialect"];
}

def SchedulePhasesPass : Pass<"kfuse-schedule-phases", "mlir::func::FuncOp"> {
  let summary = "order an update with reductions into phases, one pass each";
  let description = [{
    A reduction over a whole tensor (LAMB's norms) needs all of its input
    before its result is used, so such an update runs in phases: phase 0
    reads the arguments, and a reduction of a phase-p value makes a result
    that phases p + 1 and later read as a scalar. Each phase becomes one
    pass over memory (one kernel of a multi-tensor plan).

    A tensor that one phase computes and a later phase uses is not kept in a
    temporary as large as the tensor. The later phase reads it back where
    it was written (a new state, rounded as stored) or recomputes it from
    what it can read: the arguments and the values earlier phases wrote.
    LAMB's second phase recomputes its update direction from the moments
    the first phase stored, so the plan moves 10 values per element rather
    than 12. A value that can be neither is an error at its op, and so is a
    write whose argument's previous value a later phase still reads. The
    ops are then ordered by phase, so that kfuse-fuse-elementwise makes one
    region of each. Updates without reductions are left alone.

    A sum, maximum or variance over each row of a 2-D value whose rows have a static
    length of at most 1024 elements (a multiple of 32) ends no phase: the
    generated code holds such rows in registers and uses the result in the
    same pass, as a block-wise quantizer uses its block's absolute maximum.

    With `grid-barrier`, an update of several phases is marked
    `kfuse.grid_barrier`: its phases then run in one cooperative launch, a
    grid-wide barrier between them, instead of one launch each.

    ```mlir
    %sq = arith.mulf %p, %p : tensor<?xf32>
    %sum = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
    ```
  }];
  let options = [
    Option<"gridBarrier", "grid-barrier", "bool", "false",
           "run the phases in one cooperative launch with grid-wide barriers">,
  ];
  let statistics = [
    Statistic<"numPhases", "phases", "reduction phases of the update">,
  ];
  let dependentDialects = ["::kfuse::KFuseDialect"];
}

def HorizontalPass : Pass<"kfuse-horizontal", "mlir::func::FuncOp"> {
  let summary = "run one update over a whole list of tensor groups";
  let description = [{
    Marks an update `kfuse.multi_tensor`: the same update over N tensor
    groups (one per parameter of a model) becomes one kernel that walks a
    device-side table of pointers and sizes in equal chunks, so a step is one
    launch whatever the number of tensors. The runtime's planner builds the
    table once per parameter list. The groups differ in size, so the update
    must keep dynamic shapes, and the table holds at most 8 tensor pointers
    per group.
  }];
  let dependentDialects = ["::kfuse::KFuseDialect"];
}

def GradScalingPass : Pass<"kfuse-grad-scaling", "mlir::func::FuncOp"> {
  let summary = "GradScaler semantics: unscale grads, skip non-finite steps";
  let description = [{
    Adds a hyper argument `inv_scale` (default 1.0) and multiplies every read
    of a `grad` argument by it, and marks the update `kfuse.found_inf`: its
    plan first scans every grad for inf or NaN and the update then leaves
    params and states untouched when it finds one, on the device, with no
    host synchronization.
  }];
  let dependentDialects = ["::kfuse::KFuseDialect"];
}

def ClipGradNormPass : Pass<"kfuse-clip-grad-norm", "mlir::func::FuncOp"> {
  let summary = "clip the grads by their global norm inside the update";
  let description = [{
    torch.nn.utils.clip_grad_norm_ semantics, fused: adds a hyper argument
    `max_grad_norm` (default 1.0), reduces the squares of every grad over
    the whole parameter list (`kfuse.reduce ... over list`, named
    `grad_norm_sq`, which the runtime exposes as a device value), and
    multiplies every other read of a grad by
    min(max_grad_norm / (sqrt(grad_norm_sq) + 1e-6), 1). The update then
    runs in two phases: the norm, then the update with clipped grads. The
    grads are read twice and not written; torch's clip writes them.
    Applied before kfuse-grad-scaling, the norm is of the unscaled grads,
    and the norm phase (which reads every grad and writes nothing) also does
    GradScaler's found-inf scan: the grads are read twice in all.

    An update with an f32 hyper named `global_grad_norm` clips by a rule of
    its own (Apex's LAMB divides by max(1, norm / max_grad_norm)): the pass
    then adds no hyper and no scaling, and makes every use of that hyper the
    norm reduced in the plan (the argument stays, unread).

    With `external-norm`, the norm is not reduced here: the pass adds a
    second hyper `global_grad_norm` (default 0, no clipping) that the caller
    computes, for updates whose list is split over several plans that must
    clip by one norm. An update with its own `global_grad_norm` is then left
    as it is.
  }];
  let options = [
    Option<"externalNorm", "external-norm", "bool", "false",
           "take the norm as a hyper 'global_grad_norm' the caller computes">,
  ];
  let dependentDialects = ["::kfuse::KFuseDialect",
                           "::mlir::math::MathDialect"];
}

def MasterWeightsPass : Pass<"kfuse-master-weights", "mlir::func::FuncOp"> {
  let summary = "write a low-precision model copy of f32 master params";
  let description = [{
    Mixed-precision training keeps f32 master weights in the optimizer and a
    bf16 or f16 copy in the model. For every `param` argument this pass appends
    a `model` argument, named `<param>_model` (in param order, after all
    other arguments), and writes the updated param to it too: the copy is made in the same pass over memory as the update,
    in the storage dtype `kfuse-specialize` binds (`model-dtype`).
  }];
  let dependentDialects = ["::kfuse::KFuseDialect"];
}

#endif // KFUSE_PASSES_TD
