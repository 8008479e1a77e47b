// What the 2-D kernels do not generate is an error at the IR location, never
// a kernel that races or reads a total per element it cannot have.
// RUN: not kfuse compile %S/Inputs/matrix-column-total-per-element.mlir --emit=cuda 2>&1 | FileCheck %s --check-prefix=COLUMN-TOTAL
// RUN: not kfuse compile %S/Inputs/matrix-column-state-race.mlir --emit=cuda 2>&1 | FileCheck %s --check-prefix=COLUMN-RACE
// RUN: not kfuse compile %S/Inputs/matrix-row-over-rows.mlir --emit=cuda 2>&1 | FileCheck %s --check-prefix=ROW-OVER-ROWS

// A column's total is combined from its chunks' partials where a value per
// column is computed, once per column: an element cannot read it.
// COLUMN-TOTAL: matrix-column-total-per-element.mlir:8:12: error: 'kfuse.fused' op reads a reduction over columns in a phase that also computes values per element; compute the values per column from it into a state, which later phases read

// A column's value is written by one chunk while the others' element loops
// would read the old one.
// COLUMN-RACE: matrix-column-state-race.mlir:6:12: error: 'kfuse.fused' op writes 'col_var', a state per column, in a phase whose element math reads its previous value; a state per column is written in a phase of its own

// ROW-OVER-ROWS: matrix-row-over-rows.mlir:7:11: error: 'kfuse.reduce' op reduces a value per row or per column over its own dimension, which generates no code; reduce it over the other one to a value per tensor
