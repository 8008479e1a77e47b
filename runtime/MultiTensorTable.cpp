//===- MultiTensorTable.cpp - host image of a multi-tensor table ----------===//

#include "runtime/MultiTensorTable.h"
#include "runtime/Errors.h"

#include "llvm/ADT/StringRef.h"

#include <cstdlib>
#include <limits>

namespace kfuse {

static llvm::Error invalid(const llvm::Twine &message) {
  return makeError(ErrorCode::InvalidArgument, message);
}

int64_t defaultChunkElements() {
  if (const char *text = std::getenv("KFUSE_CHUNK_ELEMENTS")) {
    int64_t parsed = 0;
    if (!llvm::StringRef(text).getAsInteger(10, parsed) && parsed > 0)
      return parsed;
  }
  return kDefaultChunkElements;
}

bool defaultGridBarrier() {
  const char *text = std::getenv("KFUSE_SEPARATE_PHASES");
  return !text || llvm::StringRef(text) != "1";
}

/// The first argument of a group with one value per element.
static size_t firstElementArg(size_t perGroup, llvm::ArrayRef<bool> perTensor) {
  size_t first = 0;
  while (first + 1 < perGroup && first < perTensor.size() && perTensor[first])
    ++first;
  return first;
}

llvm::Error validateTensorGroups(llvm::ArrayRef<TableTensor> tensors,
                                 llvm::ArrayRef<std::string> argNames,
                                 llvm::ArrayRef<bool> perTensor) {
  size_t perGroup = argNames.size();
  if (perGroup == 0)
    return invalid("a multi-tensor table needs at least one tensor argument");
  if (perGroup > kMaxTensorArgs)
    return invalid("a multi-tensor table holds at most " +
                   llvm::Twine(kMaxTensorArgs) +
                   " tensors a group, the update has " + llvm::Twine(perGroup));
  if (tensors.size() % perGroup != 0)
    return invalid(llvm::Twine(tensors.size()) +
                   " tensors do not make whole groups of " +
                   llvm::Twine(perGroup));
  if (!perTensor.empty() && perTensor.size() != perGroup)
    return invalid("per-tensor flags for " + llvm::Twine(perTensor.size()) +
                   " arguments, the groups have " + llvm::Twine(perGroup));
  size_t reference = firstElementArg(perGroup, perTensor);
  size_t numGroups = tensors.size() / perGroup;
  if (numGroups > size_t(std::numeric_limits<int32_t>::max()))
    return invalid(llvm::Twine(numGroups) +
                   " tensor groups; a table holds at most 2^31-1");
  for (size_t group = 0; group < numGroups; ++group) {
    llvm::ArrayRef<TableTensor> members =
        tensors.slice(group * perGroup, perGroup);
    for (size_t i = 0; i < perGroup; ++i) {
      const TableTensor &tensor = members[i];
      if (tensor.numel < 0)
        return invalid("tensor group " + llvm::Twine(group) + ": '" +
                       argNames[i] + "' has negative numel " +
                       llvm::Twine(tensor.numel));
      if (tensor.address == 0 && tensor.numel > 0)
        return invalid("tensor group " + llvm::Twine(group) + ": '" +
                       argNames[i] + "' is a null pointer with " +
                       llvm::Twine(tensor.numel) + " elements");
      if (!perTensor.empty() && perTensor[i]) {
        if (tensor.numel != 1 || tensor.address == 0)
          return invalid("tensor group " + llvm::Twine(group) + ": '" +
                         argNames[i] +
                         "' is a state at the tensor level: one f32 a "
                         "group, got " +
                         llvm::Twine(tensor.numel) + " elements");
        continue;
      }
      if (tensor.numel != members[reference].numel)
        return invalid("tensor group " + llvm::Twine(group) + ": '" +
                       argNames[i] + "' has " + llvm::Twine(tensor.numel) +
                       " elements but '" + argNames[reference] + "' has " +
                       llvm::Twine(members[reference].numel));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<MultiTensorTable>
buildMultiTensorTable(llvm::ArrayRef<TableTensor> tensors,
                      llvm::ArrayRef<std::string> argNames,
                      unsigned vectorWidth, int64_t chunkElements,
                      llvm::ArrayRef<bool> perTensor) {
  if (llvm::Error error = validateTensorGroups(tensors, argNames, perTensor))
    return std::move(error);
  if (vectorWidth == 0)
    return invalid("vector width 0; expected at least 1");
  if (chunkElements <= 0)
    return invalid("chunk size " + llvm::Twine(chunkElements) +
                   "; expected a positive element count");
  // Chunk begins must stay vector-aligned: round the chunk size up.
  int64_t width = vectorWidth;
  if (chunkElements > std::numeric_limits<int64_t>::max() - width)
    return invalid("chunk size " + llvm::Twine(chunkElements) + " too large");
  chunkElements = (chunkElements + width - 1) / width * width;

  size_t perGroup = argNames.size();
  size_t reference = firstElementArg(perGroup, perTensor);
  size_t numGroups = tensors.size() / perGroup;
  MultiTensorTable table;
  // Count first, so that an impossible table fails before allocating it.
  int64_t numChunks = 0;
  for (size_t group = 0; group < numGroups; ++group) {
    int64_t numel = tensors[group * perGroup + reference].numel;
    int64_t groupChunks =
        numel / chunkElements + (numel % chunkElements != 0 ? 1 : 0);
    if (__builtin_add_overflow(numChunks, groupChunks, &numChunks) ||
        __builtin_add_overflow(table.totalElements, numel,
                               &table.totalElements))
      return invalid("the tensor groups hold more than 2^63 elements");
  }
  if (numChunks > std::numeric_limits<int32_t>::max())
    return invalid("the tensor groups make " + llvm::Twine(numChunks) +
                   " chunks of " + llvm::Twine(chunkElements) +
                   " elements; at most 2^31-1 fit a table (use larger chunks)");

  table.entries.resize(numGroups);
  table.chunks.reserve(numChunks);
  for (size_t group = 0; group < numGroups; ++group) {
    llvm::ArrayRef<TableTensor> members =
        tensors.slice(group * perGroup, perGroup);
    MultiTensorEntry &entry = table.entries[group];
    entry = MultiTensorEntry{};
    entry.numel = members[reference].numel;
    entry.aligned = 1;
    entry.firstChunk = static_cast<int32_t>(table.chunks.size());
    for (size_t i = 0; i < perGroup; ++i) {
      entry.pointers[i] = members[i].address;
      bool value = !perTensor.empty() && perTensor[i]; // read as one float
      if (!value && members[i].address % 16 != 0)
        entry.aligned = 0;
    }
    // `begin = chunk.end` rather than `+= chunkElements`: no overflow near
    // 2^63.
    for (int64_t begin = 0; begin < entry.numel;) {
      MultiTensorChunk chunk{};
      chunk.entry = static_cast<int32_t>(group);
      chunk.begin = begin;
      chunk.end = entry.numel - begin > chunkElements ? begin + chunkElements
                                                      : entry.numel;
      table.chunks.push_back(chunk);
      begin = chunk.end;
    }
  }
  return table;
}

} // namespace kfuse
