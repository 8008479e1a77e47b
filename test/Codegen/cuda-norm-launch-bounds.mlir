// The row kernel's __launch_bounds__: a forward norm asks ptxas for as many
// blocks per SM as keep 64 KiB of its rows loading, where threads, shared
// memory and the registers it needs allow; kernels with column sums keep the
// blocks of the layout's register cap (512 threads per SM).
//
// bf16 LayerNorm, 4096 columns: 2 rows of 8 KiB a block; 4 blocks fit in 64
// registers a thread.
// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=4096 --input-dtype=bf16 --emit=cuda | FileCheck %s --check-prefix=BF16
// BF16: // The row kernel of @layernorm_fwd
// BF16-NEXT: __launch_bounds__(256, 4)
//
// f32: the rows are twice as long, 2 blocks of 32 KiB already reach 64 KiB.
// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=4096 --emit=cuda | FileCheck %s --check-prefix=F32
// F32: // The row kernel of @layernorm_fwd
// F32-NEXT: __launch_bounds__(256, 2)
//
// 12288 f32 columns, one row a block: 2 blocks would need 85 registers a
// thread, which the row does not fit in; the layout's 1 block stays.
// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=12288 --emit=cuda | FileCheck %s --check-prefix=LONG
// LONG: // The row kernel of @layernorm_fwd
// LONG-NEXT: __launch_bounds__(384, 1)
//
// The backward's column sums stay in registers: no more blocks.
// RUN: kfuse compile %library/norm/layernorm_bwd.mlir --cols=4096 --input-dtype=bf16 --emit=cuda | FileCheck %s --check-prefix=BWD
// BWD: // The row kernel of @layernorm_bwd
// BWD-NEXT: __launch_bounds__(256, 2)
//
// KFUSE_NORM_LAUNCH_BLOCKS overrides the choice (for measuring), and
// --stats reports it.
// RUN: env KFUSE_NORM_LAUNCH_BLOCKS=3 kfuse compile %library/norm/layernorm_bwd.mlir --cols=4096 --input-dtype=bf16 --emit=cuda | FileCheck %s --check-prefix=KNOB
// KNOB: // The row kernel of @layernorm_bwd
// KNOB-NEXT: __launch_bounds__(256, 3)
// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=4096 --input-dtype=bf16 --stats -o /dev/null | FileCheck %s --check-prefix=STATS
// STATS: "launch_blocks":4
//
// bf16 LayerNorm, 12288 columns: a long row kept in registers, 64 elements a
// thread (16-bit ones counted two a register), 3 blocks of 24 KiB rows.
// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=12288 --input-dtype=bf16 --emit=cuda | FileCheck %s --check-prefix=BF16LONG
// BF16LONG: 192 threads per row (8 vector(s) each, in registers), 1 row(s) per block.
// BF16LONG: // The row kernel of @layernorm_fwd
// BF16LONG-NEXT: __launch_bounds__(192, 3)
