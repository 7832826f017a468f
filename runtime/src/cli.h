/*===- cli.h - Shared pieces of the standalone executables' command line ---===*
 *
 * Not installed and not part of the API: the parsed options every
 * subcommand shares (cli.c) and the training subcommands (cli_train.c).
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_CLI_H
#define ATTN_RUNTIME_CLI_H

#include "internal.h"

enum { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2 };

#define MAX_INS 64

/* Run-time overrides of `train { }` values (--lr, --beta1, ...). */
enum {
  HYPER_OPT_LR,
  HYPER_OPT_BETA1,
  HYPER_OPT_BETA2,
  HYPER_OPT_EPS,
  HYPER_OPT_WEIGHT_DECAY,
  HYPER_OPT_CLIP_NORM,
  HYPER_OPT_WARMUP,
  HYPER_OPT_SCHEDULE_STEPS,
  HYPER_OPT_D_MODEL,
  HYPER_OPT_COUNT
};

/* Everything any subcommand accepts; each subcommand lists the options it
 * takes, and the parser rejects the others. */
typedef struct cli {
  const char *prog;    /* basename of argv[0] */
  const char *command;
  const attn_model_info *model;
  const char *weights, *out, *fn, *prompt, *ids_out;
  const char *ins[MAX_INS];
  int num_ins;
  uint64_t seed;
  int has_seed;
  int64_t tokens, context;
  int64_t bos, eos; /* generate's start and stop tokens; eos -1: none */
  double temperature, top_p;
  int32_t top_k, threads;
  /* Training. */
  const char *data, *resume, *log, *checkpoint;
  int format;           /* attn_data_format; ATTN_DATA_AUTO by default */
  int64_t steps, batch, seq, save_every; /* 0: not given */
  int64_t min_count;                     /* 0: not given */
  int schedule;         /* attn_schedule_kind, -1: not given */
  double hyper[HYPER_OPT_COUNT];
  int has_hyper[HYPER_OPT_COUNT];
} cli;

int attn_cli_usage_error(const cli *c, const char *fmt, ...) ATTN_PRINTF(2, 3);
/* Reports the runtime's last error, which already names file and tensor. */
int attn_cli_input_error(void);
int attn_cli_input_errorf(const char *fmt, ...) ATTN_PRINTF(1, 2);

/* Creates the context and loads -w (required when the model has
 * parameters); returns an exit status, or -1 to go on. */
int attn_cli_load_weights(cli *c, attn_ctx **ctx);

/* Binds the --in options to the INPUT arguments of `e` (in its order) and
 * reads them (i64 ids narrowed to i32 arguments) and checks them; returns an
 * exit status, or -1 with inputs[0 .. attn_entry_num_inputs(e)) filled. */
int attn_cli_read_inputs(cli *c, const attn_entry_info *e,
                         attn_tensor *inputs);

int attn_cmd_grad(cli *c);
int attn_cmd_train(cli *c);
int attn_cmd_eval(cli *c);

#endif /* ATTN_RUNTIME_CLI_H */
