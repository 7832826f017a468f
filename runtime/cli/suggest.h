/*===- suggest.h - "did you mean" for misspelt commands and options -------===*
 *
 * The executables' twin of the compiler's Suggestions.h, with the same rule:
 * the candidate within max(1, length / 3) edits of the misspelt word (a
 * swap of neighbouring letters counts one), keeping a letter of it, and no
 * other candidate as close; a tie suggests nothing.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_CLI_SUGGEST_H
#define ATTN_CLI_SUGGEST_H

#include <stddef.h>

/* The closest of `n` candidates (an array of strings, `stride` bytes apart,
 * starting at `first`) to `word`, or NULL. The stride lets a caller pass the
 * name field of an array of structs. */
const char *attn_cli_closest(const char *word, const void *first, size_t n,
                             size_t stride);

#endif /* ATTN_CLI_SUGGEST_H */
