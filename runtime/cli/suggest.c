/*===- suggest.c - "did you mean" for misspelt commands and options -------===*/

#include "suggest.h"

#include <string.h>

/* Edit distance with a swap of neighbouring letters as one edit (optimal
 * string alignment), for words up to 63 letters; longer ones are far from
 * every candidate. */
static size_t distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 63 || m > 63)
    return (size_t)-1;
  size_t d[64][64];
  for (size_t i = 0; i <= n; ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= m; ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

const char *attn_cli_closest(const char *word, const void *first, size_t n,
                             size_t stride) {
  size_t length = strlen(word);
  if (length < 2)
    return NULL;
  size_t most = length / 3 > 1 ? length / 3 : 1;
  if (most > length - 1)
    most = length - 1;
  const char *best = NULL;
  size_t best_distance = most + 1;
  int tied = 0;
  for (size_t i = 0; i < n; ++i) {
    const char *candidate =
        *(const char *const *)((const char *)first + i * stride);
    if (!candidate || !*candidate || strcmp(candidate, word) == 0)
      continue;
    size_t d = distance(word, candidate);
    if (d > most)
      continue;
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
      tied = 0;
    } else if (d == best_distance && strcmp(candidate, best) != 0) {
      tied = 1;
    }
  }
  return tied ? NULL : best;
}
