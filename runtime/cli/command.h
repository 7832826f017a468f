/*===- command.h - The parsed command line and the subcommands ------------===*
 *
 * Not installed and not part of the API of libattncli: the parsed command
 * line every subcommand reads, the table of commands and their options
 * (main.c, options.c), the messages and exit statuses, and the subcommands
 * (commands.c, train.c, tokenize.c).
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_CLI_COMMAND_H
#define ATTN_CLI_COMMAND_H

#include "attn/cli.h"
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

/* Everything any subcommand accepts, filled by the option table
 * (options.c); each subcommand lists the options it takes, and the parser
 * rejects the others. */
typedef struct cli {
  const char *prog;    /* basename of argv[0] */
  const char *command;
  const attn_model_info *model;
  const char *weights, *out, *prompt, *ids_out;
  const char *fn;         /* --entry NAME (or --fn NAME): the entry point */
  const char *tokenizer;  /* --tokenizer DIR: GPT-2's BPE instead of bytes */
  const char *text, *ids; /* tokenize's input */
  int ignore_extra;       /* -w: skip tensors the model does not have */
  int shard_optimizer;    /* train under mpirun: ZeRO-1 (dist.h) */
  const char *ins[MAX_INS];
  int num_ins;
  uint64_t seed;
  int has_seed;
  int64_t tokens, context;
  int64_t bos, eos; /* generate's start and stop tokens; eos -1: none */
  double temperature, top_p;
  int64_t top_k, threads; /* threads 0: all cores */
  int64_t layer, head;    /* attention's layer and head */
  /* Training. */
  const char *data, *resume, *log, *checkpoint;
  const char *eval_data; /* train: held-out data, its loss on the curve */
  int64_t eval_every;    /* 0: not given */
  int format;           /* attn_data_format; ATTN_DATA_AUTO by default */
  int64_t steps, batch, seq, save_every; /* 0: not given */
  int64_t min_count;                     /* 0: not given */
  int schedule;         /* attn_schedule_kind, -1: not given */
  double hyper[HYPER_OPT_COUNT];
  int has_hyper[HYPER_OPT_COUNT];
} cli;

/* An option a command takes, and its line in the command's --help after
 * the option's name and value (options.c), continued on further lines after
 * each '\n'. Options whose help is NULL are listed together, on one line
 * before the next option's. */
typedef struct cli_command_option {
  const char *name;
  const char *help;
} cli_command_option;

/* A subcommand: its line in the usage, its --help, the options it takes
 * (ending with a NULL name; every command also takes --threads) and what
 * runs it, returning the exit status. */
typedef struct cli_command {
  const char *name;
  const char *summary;     /* one line for the command list */
  const char *synopsis;    /* after "PROG NAME " */
  const char *description; /* the paragraph before the options */
  const cli_command_option *options;
  int (*run)(cli *c);
} cli_command;

/* Parses argv[first ..) for `cmd` into *c: `-x V`, `--xx V` and `--xx=V`,
 * or --help. Returns an exit status to stop with, or -1 to run the command. */
int attn_cli_parse_options(cli *c, const cli_command *cmd, int argc,
                           char **argv, int first);

/* One `error: ... (see 'PROG COMMAND --help')` line; returns EXIT_USAGE. */
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

/* Loads --tokenizer into *bpe (NULL without the option); returns an exit
 * status, or -1 to go on. */
int attn_cli_load_tokenizer(const cli *c, attn_bpe **bpe);
/* Fails (returning an exit status; -1 to go on) when the model's vocabulary,
 * `vocab` (0: unknown), cannot hold every token of the tokenizer. */
int attn_cli_check_vocab(const cli *c, const attn_bpe *bpe, int64_t vocab);

int attn_cmd_info(cli *c);
int attn_cmd_init(cli *c);
int attn_cmd_forward(cli *c);
int attn_cmd_generate(cli *c);
int attn_cmd_grad(cli *c);
int attn_cmd_train(cli *c);
int attn_cmd_eval(cli *c);
int attn_cmd_tokenize(cli *c);
int attn_cmd_attention(cli *c);

#endif /* ATTN_CLI_COMMAND_H */
