//===- SchedulePhases.cpp - order an update's ops into reduction phases --===//
//
// A reduction over a whole tensor needs all of its input before anything
// uses its result, so an update with reductions runs in phases, one pass
// over memory each: phase 0 reads the arguments, a reduction of a phase-p
// value ends phase p and its result is known from phase p + 1 on. A tensor
// value of phase p that phase q > p uses would have to be kept in a
// temporary as large as the tensor. Instead, phase q reads back what phase p
// wrote (the new state, as stored) or recomputes it from values it can read,
// as LAMB's second pass recomputes its update direction from the moments
// the first pass stored. The ops are then ordered by phase, so that each
// phase is one run of ops that kfuse-fuse-elementwise makes one region. A
// reduction of each row of rows held in registers (isRowLocalReduce) ends
// no phase: its result is known in the pass that reads the row.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kfuse {
#define GEN_PASS_DEF_SCHEDULEPHASESPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

namespace {

/// Elementwise tensor math that a later phase may recompute.
static bool isRecomputable(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0 ||
      !isa<RankedTensorType>(op->getResult(0).getType()) ||
      !isMemoryEffectFree(op))
    return false;
  return isa<ConvertOp, BroadcastOp>(op) ||
         (op->hasTrait<OpTrait::Elementwise>() &&
          isa<arith::ArithDialect, math::MathDialect>(op->getDialect()));
}

/// Whether `op` reads the elements of operand `index`, not only its shape
/// (a broadcast's `like`, a dim_size's input).
static bool readsElements(Operation *op, unsigned index) {
  if (isa<DimSizeOp>(op))
    return false;
  if (isa<BroadcastOp>(op))
    return index == 0;
  return true;
}

class PhaseScheduler {
public:
  explicit PhaseScheduler(func::FuncOp func) : func(func) {}
  LogicalResult run();
  unsigned getNumPhases() const { return numPhases; }

private:
  unsigned phaseOfValue(Value value) const;
  void assignPhases();
  /// The earliest phase that needs `value` (a reduction's result) in
  /// tensor math, through scalar math on it; 0 when none does.
  unsigned neededPhase(Value value) const;
  /// Adds the arguments that phase `phase` reads to make `value` (read
  /// back or recomputed); false where it cannot be made there.
  bool collectReads(Value value, unsigned phase,
                    SmallPtrSetImpl<Value> &visited,
                    SetVector<Value> &reads) const;
  bool deferReductions();
  /// The value of `value` (of an earlier phase) as phase `phase` can read
  /// it, built before `user` where it is new.
  FailureOr<Value> materialize(Value value, unsigned phase, Operation *user);
  LogicalResult checkWrites();
  /// The latest phase whose math or writes read the results of `user`
  /// (its own phase, unless it is scalar math, which runs where it is used).
  unsigned usePhase(Operation *user) const;
  LogicalResult checkPerTensorStates();
  void orderByPhase();

  func::FuncOp func;
  DenseMap<Operation *, unsigned> phaseOf;
  /// What each (value, phase) became, so each is built once per phase.
  DenseMap<std::pair<Value, unsigned>, Value> materialized;
  /// Values written to an argument, with the write.
  DenseMap<Value, WriteOp> writeOf;
  /// Reductions accumulated in a later phase than their input's: where that
  /// phase reads the input's arguments anyway, the earlier one need not.
  DenseMap<Operation *, unsigned> deferredTo;
  mutable DenseMap<Value, unsigned> neededPhases, latestUsePhases;
  unsigned numPhases = 1;
};

unsigned PhaseScheduler::phaseOfValue(Value value) const {
  Operation *def = value.getDefiningOp();
  return def ? phaseOf.lookup(def) : 0;
}

FailureOr<Value> PhaseScheduler::materialize(Value value, unsigned phase,
                                             Operation *user) {
  if (isa<BlockArgument>(value) || isUniformTensor(value) ||
      !isa<RankedTensorType>(value.getType()) || phaseOfValue(value) >= phase)
    return value;
  if (Value done = materialized.lookup({value, phase}))
    return done;
  Operation *def = value.getDefiningOp();
  OpBuilder builder(user);
  Value result;
  if (writeOf.count(value)) {
    // Written in its own phase: read back from the argument.
    result = value;
  } else if (auto stored = llvm::find_if(
                 value.getUsers(),
                 [&](Operation *op) {
                   return isa<ConvertOp>(op) && writeOf.count(op->getResult(0));
                 });
             stored != value.getUsers().end()) {
    // Written in a narrower storage type: read back as stored, rounded.
    Value storedValue = (*stored)->getResult(0);
    auto convert = ConvertOp::create(builder, value.getLoc(), value.getType(),
                                     storedValue);
    phaseOf[convert] = phase;
    result = convert;
  } else if (isRecomputable(def)) {
    SmallVector<Value> operands;
    for (OpOperand &use : def->getOpOperands()) {
      Value operand = use.get();
      // A broadcast's shape operand is read for its shape alone.
      if (!readsElements(def, use.getOperandNumber())) {
        operands.push_back(operand);
        continue;
      }
      FailureOr<Value> available = materialize(operand, phase, user);
      if (failed(available))
        return failure();
      operands.push_back(*available);
    }
    builder.setInsertionPoint(user);
    Operation *clone = builder.clone(*def);
    clone->setOperands(operands);
    phaseOf[clone] = phase;
    result = clone->getResult(0);
  } else {
    InFlightDiagnostic diag =
        def->emitOpError()
        << "computes a tensor in reduction phase " << phaseOfValue(value)
        << " that phase " << phase
        << " needs, and it can neither be read back nor recomputed there";
    diag.attachNote(user->getLoc()) << "used here";
    return failure();
  }
  materialized[{value, phase}] = result;
  return result;
}

LogicalResult PhaseScheduler::checkWrites() {
  // A write takes effect in its value's phase; a later phase must not need
  // the argument's previous value.
  for (auto [value, write] : writeOf) {
    unsigned writePhase = phaseOfValue(value);
    BlockArgument target = getWriteTarget(write);
    for (Operation *reader : target.getUsers()) {
      if (isa<WriteOp>(reader))
        continue;
      unsigned readPhase = phaseOf.lookup(reader);
      if (readPhase <= writePhase)
        continue;
      InFlightDiagnostic diag =
          write.emitOpError()
          << "writes '" << getArgName(func, target.getArgNumber())
          << "' in reduction phase " << writePhase << ", but phase "
          << readPhase
          << " reads its previous value; compute the new value after the "
             "reduction, or read the new value instead";
      diag.attachNote(reader->getLoc()) << "read here";
      return failure();
    }
  }
  return success();
}

unsigned PhaseScheduler::usePhase(Operation *user) const {
  // Scalar math and broadcasts of scalars run wherever they are used.
  bool scalarMath = user->getNumResults() != 0 &&
                    llvm::all_of(user->getResults(), [](Value result) {
                      return !isa<RankedTensorType>(result.getType()) ||
                             isUniformTensor(result);
                    });
  if (!scalarMath)
    return phaseOf.lookup(user);
  unsigned latest = 0;
  for (Value result : user->getResults()) {
    auto known = latestUsePhases.find(result);
    if (known == latestUsePhases.end()) {
      unsigned phase = 0;
      for (Operation *next : result.getUsers())
        phase = std::max(phase, usePhase(next));
      known = latestUsePhases.try_emplace(result, phase).first;
    }
    latest = std::max(latest, known->second);
  }
  return latest;
}

LogicalResult PhaseScheduler::checkPerTensorStates() {
  // The last block to finish a tensor's chunks in the write's phase stores
  // the new value: no later phase can read the previous one.
  for (auto [value, write] : writeOf) {
    BlockArgument target = getWriteTarget(write);
    if (!isPerTensorArg(func, target.getArgNumber()))
      continue;
    unsigned writePhase = phaseOfValue(value);
    for (OpOperand &use : target.getUses()) {
      Operation *reader = use.getOwner();
      if (reader == write)
        continue;
      unsigned readPhase = usePhase(reader);
      if (readPhase <= writePhase)
        continue;
      InFlightDiagnostic diag =
          write.emitOpError()
          << "writes '" << getArgName(func, target.getArgNumber())
          << "', a state at the tensor level, in reduction phase " << writePhase
          << ", but phase " << readPhase
          << " reads its previous value; a state at the tensor level is "
             "read no later than the phase that writes it";
      diag.attachNote(reader->getLoc()) << "read here";
      return failure();
    }
  }
  return success();
}

void PhaseScheduler::orderByPhase() {
  Block &body = func.getBody().front();
  SmallVector<SmallVector<Operation *>> buckets(numPhases);
  for (Operation &op : body.without_terminator())
    if (!isa<WriteOp>(op))
      buckets[phaseOf.lookup(&op)].push_back(&op);
  Operation *terminator = body.getTerminator();
  for (ArrayRef<Operation *> bucket : buckets)
    for (Operation *op : bucket)
      op->moveBefore(terminator);
  // Writes take effect at the end: they stay last, in their order.
  SmallVector<WriteOp> writes(body.getOps<WriteOp>());
  for (WriteOp write : writes)
    write->moveBefore(terminator);
}

void PhaseScheduler::assignPhases() {
  Block &body = func.getBody().front();
  numPhases = 1;
  for (Operation &op : body.without_terminator()) {
    unsigned phase = 0;
    // A broadcast follows its shape operand too, which it must come after
    // (a 1 x 1 reduction's, in a 2-D update; others take an argument's).
    for (OpOperand &operand : op.getOpOperands())
      if (readsElements(&op, operand.getOperandNumber()) ||
          isa<BroadcastOp>(op))
        phase = std::max(phase, phaseOfValue(operand.get()));
    // A whole-tensor reduction of a row or column reduction accumulates
    // in the inner one's phase, from its input.
    // A row held in registers is reduced within its phase.
    if (auto reduce = dyn_cast<ReduceOp>(op);
        reduce && !getWholeTensorReduceInput(reduce) &&
        !isRowLocalReduce(reduce))
      phase = std::max(phase + 1, deferredTo.lookup(&op));
    phaseOf[&op] = phase;
    numPhases = std::max(numPhases, phase + 1);
    if (auto write = dyn_cast<WriteOp>(op))
      writeOf[write.getValue()] = write;
  }
}

unsigned PhaseScheduler::neededPhase(Value value) const {
  // Memoized: scalar math may reach a use along many paths.
  if (auto known = neededPhases.find(value); known != neededPhases.end())
    return known->second;
  unsigned needed = 0;
  auto need = [&](unsigned phase) {
    if (phase)
      needed = needed ? std::min(needed, phase) : phase;
  };
  for (Operation *user : value.getUsers()) {
    // Scalar math and broadcasts of scalars run wherever they are used.
    bool tensorMath = user->getNumResults() == 0 ||
                      llvm::any_of(user->getResults(), [](Value result) {
                        return isa<RankedTensorType>(result.getType()) &&
                               !isUniformTensor(result);
                      });
    if (tensorMath) {
      need(phaseOf.lookup(user));
      continue;
    }
    for (Value result : user->getResults())
      need(neededPhase(result));
  }
  neededPhases[value] = needed;
  return needed;
}

bool PhaseScheduler::collectReads(Value value, unsigned phase,
                                  SmallPtrSetImpl<Value> &visited,
                                  SetVector<Value> &reads) const {
  if (!isa<RankedTensorType>(value.getType()) || isUniformTensor(value) ||
      !visited.insert(value).second)
    return true;
  if (isa<BlockArgument>(value)) {
    reads.insert(value);
    return true;
  }
  Operation *def = value.getDefiningOp();
  if (phaseOfValue(value) < phase) {
    // As materialize makes it: read back, or recomputed.
    if (auto write = writeOf.find(value); write != writeOf.end()) {
      reads.insert(getWriteTarget(write->second));
      return true;
    }
    for (Operation *user : value.getUsers())
      if (isa<ConvertOp>(user))
        if (auto write = writeOf.find(user->getResult(0));
            write != writeOf.end()) {
          reads.insert(getWriteTarget(write->second));
          return true;
        }
    if (!isRecomputable(def))
      return false;
  }
  for (OpOperand &operand : def->getOpOperands())
    if (readsElements(def, operand.getOperandNumber()) &&
        !collectReads(operand.get(), phase, visited, reads))
      return false;
  return true;
}

bool PhaseScheduler::deferReductions() {
  Block &body = func.getBody().front();
  // What each phase reads for its own math.
  SmallVector<SetVector<Value>> readIn(numPhases);
  for (Operation &op : body.without_terminator()) {
    if (isa<ReduceOp, WriteOp>(op))
      continue;
    unsigned phase = phaseOf.lookup(&op);
    SmallPtrSet<Value, 16> visited;
    for (OpOperand &operand : op.getOpOperands())
      if (readsElements(&op, operand.getOperandNumber()))
        (void)collectReads(operand.get(), phase, visited, readIn[phase]);
  }
  bool deferred = false;
  for (auto reduce : body.getOps<ReduceOp>()) {
    if (getWholeTensorReduceInput(reduce) || isRowLocalReduce(reduce))
      continue; // follows its inner reduction, or ends no phase
    unsigned earliest = phaseOf.lookup(reduce);
    unsigned needed = neededPhase(reduce.getResult());
    // The latest phase before the result is needed whose own reads cover
    // the input's.
    for (unsigned at = needed; at > earliest; --at) {
      SmallPtrSet<Value, 16> visited;
      SetVector<Value> reads;
      if (!collectReads(reduce.getInput(), at - 1, visited, reads) ||
          !llvm::all_of(
              reads, [&](Value read) { return readIn[at - 1].contains(read); }))
        continue;
      deferredTo[reduce] = at;
      deferred = true;
      break;
    }
  }
  return deferred;
}

LogicalResult PhaseScheduler::run() {
  Block &body = func.getBody().front();
  if (body.getOps<ReduceOp>().empty())
    return success();
  // A broadcast's shape comes from an argument of that shape where one has
  // it, so that only what it broadcasts decides its phase.
  anchorShapeOperands(func);
  assignPhases();
  if (deferReductions())
    assignPhases();

  // Every operand of an earlier phase becomes one this phase can read; a
  // reduction's input, one its accumulating phase can.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (!isa<WriteOp>(op))
      ops.push_back(&op);
  for (Operation *op : ops) {
    auto reduce = dyn_cast<ReduceOp>(op);
    unsigned phase = phaseOf.lookup(op) - (reduce && !isRowLocalReduce(reduce));
    for (OpOperand &operand : op->getOpOperands()) {
      if (!readsElements(op, operand.getOperandNumber()))
        continue;
      FailureOr<Value> available = materialize(operand.get(), phase, op);
      if (failed(available))
        return failure();
      operand.set(*available);
    }
  }
  if (failed(checkPerTensorStates()) || failed(checkWrites()))
    return failure();

  // Math that only a later phase used is now dead in its own.
  SmallVector<Operation *> all;
  for (Operation &op : body.without_terminator())
    all.push_back(&op);
  for (Operation *op : llvm::reverse(all))
    if (op->use_empty() && !isa<WriteOp>(op) && isMemoryEffectFree(op)) {
      phaseOf.erase(op);
      op->erase();
    }
  orderByPhase();
  return success();
}

struct SchedulePhasesPass
    : public kfuse::impl::SchedulePhasesPassBase<SchedulePhasesPass> {
  using SchedulePhasesPassBase::SchedulePhasesPassBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isUpdate(func))
      return;
    PhaseScheduler scheduler(func);
    if (failed(scheduler.run()))
      return signalPassFailure();
    numPhases = scheduler.getNumPhases();
    if (gridBarrier && scheduler.getNumPhases() > 1)
      func->setAttr(KFuseDialect::kGridBarrierAttrName,
                    UnitAttr::get(func.getContext()));
  }
};

} // namespace
