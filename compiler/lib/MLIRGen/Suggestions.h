//===- Suggestions.h - "did you mean" for misspelt names --------*- C++ -*-===//
//
// Picks the known name a misspelt one most likely meant, so that a diagnostic
// about an unknown name, layer, argument or option can end in
// `; did you mean 'X'?`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIRGEN_SUGGESTIONS_H
#define ATTN_MLIRGEN_SUGGESTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <optional>
#include <string>

namespace attn {
namespace mlirgen {

/// The candidate closest to `name` by edit distance (a swap of two letters
/// counts two), if it is within max(1, size / 3) edits, is not a rewrite of
/// every letter, and no other candidate is as close. A tie suggests nothing:
/// a guess between two names would mislead as often as help.
inline std::optional<llvm::StringRef>
closestName(llvm::StringRef name, llvm::ArrayRef<llvm::StringRef> candidates) {
  unsigned maxDistance = std::max<unsigned>(1, name.size() / 3);
  // A one- or two-letter name is at distance 1 or 2 from every other short
  // name; replacing all of a name's letters is no misspelling.
  if (maxDistance >= name.size())
    maxDistance = name.size() - 1;
  if (maxDistance == 0)
    return std::nullopt;
  std::optional<llvm::StringRef> best;
  unsigned bestDistance = maxDistance + 1;
  bool tied = false;
  for (llvm::StringRef candidate : candidates) {
    if (candidate == name || candidate.empty())
      continue;
    unsigned distance = name.edit_distance(candidate, /*AllowReplacements=*/true,
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

} // namespace mlirgen
} // namespace attn

#endif // ATTN_MLIRGEN_SUGGESTIONS_H
