//===- MultiTensorTable.cpp - host image of a multi-tensor table ----------===//

#include "runtime/MultiTensorTable.h"
#include "runtime/Errors.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
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
static size_t firstElementArg(size_t perGroup,
                              llvm::ArrayRef<ArgLevel> levels) {
  size_t first = 0;
  while (first + 1 < perGroup && first < levels.size() &&
         levels[first] != ArgLevel::element)
    ++first;
  return first;
}

static ArgLevel levelOf(llvm::ArrayRef<ArgLevel> levels, size_t index) {
  return index < levels.size() ? levels[index] : ArgLevel::element;
}

llvm::Error validateTensorGroups(llvm::ArrayRef<TableTensor> tensors,
                                 llvm::ArrayRef<std::string> argNames,
                                 llvm::ArrayRef<ArgLevel> levels,
                                 llvm::ArrayRef<int64_t> cols) {
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
  if (!levels.empty() && levels.size() != perGroup)
    return invalid("levels for " + llvm::Twine(levels.size()) +
                   " arguments, the groups have " + llvm::Twine(perGroup));
  size_t reference = firstElementArg(perGroup, levels);
  size_t numGroups = tensors.size() / perGroup;
  if (numGroups > size_t(std::numeric_limits<int32_t>::max()))
    return invalid(llvm::Twine(numGroups) +
                   " tensor groups; a table holds at most 2^31-1");
  if (!cols.empty() && cols.size() != numGroups)
    return invalid("row lengths for " + llvm::Twine(cols.size()) +
                   " groups, the table has " + llvm::Twine(numGroups));
  for (size_t group = 0; group < numGroups; ++group) {
    llvm::ArrayRef<TableTensor> members =
        tensors.slice(group * perGroup, perGroup);
    std::string where = "tensor group " + std::to_string(group) + ": ";
    int64_t numel = members[reference].numel;
    int64_t groupCols = cols.empty() ? 0 : cols[group];
    if (!cols.empty() && (groupCols <= 0 || numel % groupCols != 0))
      return invalid(where + "row length " + llvm::Twine(groupCols) +
                     " does not divide the " + llvm::Twine(numel) +
                     " elements of '" + argNames[reference] +
                     "'; a 2-D group needs a positive row length");
    for (size_t i = 0; i < perGroup; ++i) {
      const TableTensor &tensor = members[i];
      if (tensor.numel < 0)
        return invalid(where + "'" + argNames[i] + "' has negative numel " +
                       llvm::Twine(tensor.numel));
      if (tensor.address == 0 && tensor.numel > 0)
        return invalid(where + "'" + argNames[i] + "' is a null pointer with " +
                       llvm::Twine(tensor.numel) + " elements");
      ArgLevel level = levelOf(levels, i);
      if (level == ArgLevel::tensor) {
        if (tensor.numel != 1 || tensor.address == 0)
          return invalid(where + "'" + argNames[i] +
                         "' is a state at the tensor level: one f32 a "
                         "group, got " +
                         llvm::Twine(tensor.numel) + " elements");
        continue;
      }
      if ((level == ArgLevel::row || level == ArgLevel::column) && cols.empty())
        return invalid(where + "'" + argNames[i] +
                       "' holds a value per row or per column, which needs "
                       "each group's row length");
      int64_t expected = level == ArgLevel::row      ? numel / groupCols
                         : level == ArgLevel::column ? groupCols
                                                     : numel;
      if (tensor.numel != expected)
        return invalid(where + "'" + argNames[i] + "' has " +
                       llvm::Twine(tensor.numel) + " elements but " +
                       (level == ArgLevel::row
                            ? "the rows of '" + argNames[reference] +
                                  "' number " + llvm::Twine(expected)
                        : level == ArgLevel::column
                            ? "the row length is " + llvm::Twine(expected)
                            : "'" + argNames[reference] + "' has " +
                                  llvm::Twine(expected)));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<MultiTensorTable> buildMultiTensorTable(
    llvm::ArrayRef<TableTensor> tensors, llvm::ArrayRef<std::string> argNames,
    unsigned vectorWidth, int64_t chunkElements,
    llvm::ArrayRef<ArgLevel> levels, llvm::ArrayRef<int64_t> cols) {
  if (llvm::Error error = validateTensorGroups(tensors, argNames, levels, cols))
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
  size_t reference = firstElementArg(perGroup, levels);
  size_t numGroups = tensors.size() / perGroup;
  MultiTensorTable table;
  // Elements per chunk of each group: whole rows in a 2-D table, about
  // kMatrixChunkScale times as many.
  int64_t matrixChunkElements =
      chunkElements > std::numeric_limits<int64_t>::max() / kMatrixChunkScale
          ? std::numeric_limits<int64_t>::max()
          : chunkElements * kMatrixChunkScale;
  auto chunkOf = [&](size_t group) -> int64_t {
    if (cols.empty())
      return chunkElements;
    int64_t rows =
        std::clamp<int64_t>(matrixChunkElements / cols[group] +
                                (matrixChunkElements % cols[group] != 0),
                            kMinChunkRows, kMaxChunkRows);
    int64_t elements = 0;
    if (__builtin_mul_overflow(rows, cols[group], &elements))
      return std::numeric_limits<int64_t>::max();
    return elements;
  };
  // Count first, so that an impossible table fails before allocating it.
  int64_t numChunks = 0;
  for (size_t group = 0; group < numGroups; ++group) {
    int64_t numel = tensors[group * perGroup + reference].numel;
    int64_t chunk = chunkOf(group);
    int64_t groupChunks = numel / chunk + (numel % chunk != 0 ? 1 : 0);
    int64_t partials = 0;
    if (__builtin_add_overflow(numChunks, groupChunks, &numChunks) ||
        __builtin_add_overflow(table.totalElements, numel,
                               &table.totalElements) ||
        (!cols.empty() &&
         (__builtin_mul_overflow(groupChunks, cols[group], &partials) ||
          __builtin_add_overflow(table.totalColPartials, partials,
                                 &table.totalColPartials))))
      return invalid("the tensor groups hold more than 2^63 elements");
  }
  if (numChunks > std::numeric_limits<int32_t>::max())
    return invalid("the tensor groups make " + llvm::Twine(numChunks) +
                   " chunks of " + llvm::Twine(chunkElements) +
                   " elements; at most 2^31-1 fit a table (use larger chunks)");

  table.entries.resize(numGroups);
  table.chunks.reserve(numChunks);
  int64_t colPartials = 0;
  for (size_t group = 0; group < numGroups; ++group) {
    llvm::ArrayRef<TableTensor> members =
        tensors.slice(group * perGroup, perGroup);
    MultiTensorEntry &entry = table.entries[group];
    entry = MultiTensorEntry{};
    entry.numel = members[reference].numel;
    entry.aligned = 1;
    entry.firstChunk = static_cast<int32_t>(table.chunks.size());
    if (!cols.empty()) {
      entry.cols = cols[group];
      entry.rowBase = table.totalRows;
      entry.colPartialBase = colPartials;
      table.totalRows += entry.numel / entry.cols;
    }
    for (size_t i = 0; i < perGroup; ++i) {
      entry.pointers[i] = members[i].address;
      bool value = levelOf(levels, i) == ArgLevel::tensor; // one float
      if (!value && members[i].address % 16 != 0)
        entry.aligned = 0;
    }
    int64_t chunkLength = chunkOf(group);
    // `begin = chunk.end` rather than `+= chunkLength`: no overflow near
    // 2^63.
    for (int64_t begin = 0; begin < entry.numel;) {
      MultiTensorChunk chunk{};
      chunk.entry = static_cast<int32_t>(group);
      chunk.begin = begin;
      chunk.end =
          entry.numel - begin > chunkLength ? begin + chunkLength : entry.numel;
      table.chunks.push_back(chunk);
      begin = chunk.end;
      colPartials += entry.cols;
    }
  }
  return table;
}

} // namespace kfuse
