//===- Suggestions.h - "did you mean" for misspelt names --------*- C++ -*-===//
//
// Picks the known name a misspelt one most likely meant, so that a diagnostic
// about an unknown keyword, name, layer, argument or option can end in
// `; did you mean 'X'?`. The parser and the elaborator share it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_SUGGESTIONS_H
#define ATTN_FRONTEND_SUGGESTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <optional>
#include <string>

namespace attn {

/// Whether `a` is `b` with two neighbouring letters swapped (`modle`,
/// `model`), the commonest slip of the fingers, which plain edit distance
/// counts as two edits.
inline bool isAdjacentSwap(llvm::StringRef a, llvm::StringRef b) {
  if (a.size() != b.size())
    return false;
  size_t i = 0;
  while (i < a.size() && a[i] == b[i])
    ++i;
  return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i] &&
         a.drop_front(i + 2) == b.drop_front(i + 2);
}

/// The candidate closest to `name` by edit distance (a swap of neighbouring
/// letters counts one), if it is within max(1, size / 3) edits, keeps a
/// letter of the name, and no other candidate is as close. A tie
/// suggests nothing: a guess between two names would mislead as often as
/// help.
inline std::optional<llvm::StringRef>
closestName(llvm::StringRef name, llvm::ArrayRef<llvm::StringRef> candidates) {
  if (name.size() < 2)
    return std::nullopt;
  // Every one-letter name is one edit from every other: a suggestion keeps at
  // least one letter of the name.
  unsigned maxDistance = std::min<unsigned>(
      std::max<unsigned>(1, name.size() / 3), name.size() - 1);
  std::optional<llvm::StringRef> best;
  unsigned bestDistance = maxDistance + 1;
  bool tied = false;
  for (llvm::StringRef candidate : candidates) {
    if (candidate == name || candidate.empty())
      continue;
    unsigned distance =
        isAdjacentSwap(name, candidate)
            ? 1
            : name.edit_distance(candidate, /*AllowReplacements=*/true,
                                 /*MaxEditDistance=*/maxDistance);
    if (distance > maxDistance)
      continue;
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
      tied = false;
    } else if (distance == bestDistance && candidate != *best) {
      tied = true;
    }
  }
  if (tied)
    return std::nullopt;
  return best;
}

/// `; did you mean 'X'?` for the closest of `candidates`, or an empty string:
/// the tail of a diagnostic about the unknown `name`.
inline std::string didYouMean(llvm::StringRef name,
                              llvm::ArrayRef<llvm::StringRef> candidates) {
  std::optional<llvm::StringRef> best = closestName(name, candidates);
  if (!best)
    return "";
  return ("; did you mean '" + *best + "'?").str();
}

/// Appends the keys of `map` to `names`.
template <typename T>
void appendKeys(llvm::SmallVectorImpl<llvm::StringRef> &names,
                const llvm::StringMap<T> &map) {
  for (const auto &entry : map)
    names.push_back(entry.getKey());
}

} // namespace attn

#endif // ATTN_FRONTEND_SUGGESTIONS_H
