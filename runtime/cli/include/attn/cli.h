/*===- cli.h - The command line of standalone model executables -----------===*
 *
 * libattncli is the `main` of the executables `attnc build` makes: it turns
 * a compiled model into a program with subcommands, on top of libattnrt. A
 * program that embeds a model calls libattnrt (attn/runtime.h) itself and
 * does not link this library.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_CLI_H
#define ATTN_CLI_H

#include "attn/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The whole `main` of an executable built by `attnc build`: subcommands
 * info, init, forward, generate, grad, train and eval (the last three need
 * the model's training entry points); see docs/Runtime.md and
 * docs/Training.md. Returns the exit status: 0 on success, 1 on bad input
 * (a missing, corrupt or mismatched file), 2 on bad command-line use. Not
 * thread-safe: it writes to standard output and error. */
int attn_main(int argc, char **argv, const attn_model_info *model);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_CLI_H */
