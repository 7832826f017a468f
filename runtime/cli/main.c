/*===- main.c - attn_main: the subcommands and their dispatch --------------===*
 *
 * `attnc build` links a model with `main` calling attn_main, which gives every
 * compiled model the same subcommands (TOOLS.md, docs/Runtime.md). This file
 * holds the table of subcommands, the options each takes with its help, and
 * the messages every subcommand reports errors with.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <string.h>

#include "command.h"
#include "data.h"
#include "dist.h"
#include "suggest.h"

/*===- Messages -----------------------------------------------------------===*/

/* Prints an error line, unless a data-parallel job holds it back to report
 * it once for all its processes (dist.h). */
static void emit_error(const char *prefix, const char *fmt, va_list ap,
                       const char *suffix) {
  char line[4096];
  int n = snprintf(line, sizeof line, "%s", prefix);
  if (n >= 0 && (size_t)n < sizeof line)
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  n = (int)strlen(line);
  snprintf(line + n, sizeof line - (size_t)n, "%s\n", suffix);
  if (!attn_dist_hold_error(line))
    fputs(line, stderr);
}

int attn_cli_usage_error(const cli *c, const char *fmt, ...) {
  char suffix[256];
  if (c->command)
    snprintf(suffix, sizeof suffix, " (see '%s %s --help')", c->prog,
             c->command);
  else
    snprintf(suffix, sizeof suffix, " (see '%s --help')", c->prog);
  va_list ap;
  va_start(ap, fmt);
  emit_error("error: ", fmt, ap, suffix);
  va_end(ap);
  return EXIT_USAGE;
}

int attn_cli_input_error(void) {
  return attn_cli_input_errorf("%s", attn_last_error());
}

int attn_cli_input_errorf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_error("error: ", fmt, ap, "");
  va_end(ap);
  return EXIT_INPUT;
}

/*===- The subcommands ----------------------------------------------------===*/

/* The options of each command, in the order its --help lists them. */
static const cli_command_option INFO_OPTIONS[] = {{NULL, NULL}};

static const cli_command_option INIT_OPTIONS[] = {
    {"--seed", "random seed (default 0)"},
    {"-o", "the safetensors file to write"},
    {NULL, NULL}};

static const cli_command_option FORWARD_OPTIONS[] = {
    {"-w", "weights (safetensors: F32, BF16 or F16)"},
    {"--ignore-extra", "skip the tensors of -w the model does not have\n"
                       "(listed on standard error)"},
    {"--in", "binds argument ARG to a .npy file; one per\n"
             "argument (i64 files are accepted for i32)"},
    {"--entry", "the entry point (default forward)"},
    {"-o", "the output .npy (or prefix, see above)"},
    {NULL, NULL}};

static const cli_command_option GENERATE_OPTIONS[] = {
    {"-w", "weights (safetensors: F32, BF16 or F16)"},
    {"--ignore-extra", "skip the tensors of -w the model does not have\n"
                       "(listed on standard error)"},
    {"--prompt", "the start of the text (at least one byte)"},
    {"--tokens", "new tokens to generate (default 100)"},
    {"--temperature", "0 is greedy decoding (default 1)"},
    {"--top-k", "sample from the K most likely (default 0: all)"},
    {"--top-p", "sample from the nucleus of probability P\n"
                "(default 1: all)"},
    {"--seed", "random seed (default 0)"},
    {"--ids-out", "also save the new token ids as i32 .npy"},
    {"--context", "feed forward only the last N tokens\n"
                  "(default 0: the whole sequence)"},
    {"--eos", "stop after producing token N (not written)"},
    {"--bos", "encoder-decoder models: the target's start\n"
              "token (default 0)"},
    {"--tokenizer", "GPT-2's tokenizer (encoder.json, vocab.bpe)\n"
                    "instead of bytes"},
    {NULL, NULL}};

static const cli_command_option GRAD_OPTIONS[] = {
    {"-w", "weights (safetensors: F32, BF16 or F16)"},
    {"--ignore-extra", "skip the tensors of -w the model does not have\n"
                       "(listed on standard error)"},
    {"--in", "binds argument ARG of the loss fn to a .npy"},
    {"--entry", "the loss fn (default: train { loss })"},
    {"--seed", "dropout seed (default 0; the call's seed is\n"
               "attn_dropout_seed(N, 0))"},
    {"-o", "the gradients (safetensors)"},
    {NULL, NULL}};

static const cli_command_option TRAIN_OPTIONS[] = {
    {"-w", "initial weights (safetensors)"},
    {"--data", "training data: text, .npy tokens, .tagged\n"
               "word<TAB>tag, or .tsv input<TAB>target pairs"},
    {"--format", "text, tokens, tagged or pairs (default: by\n"
                 "the file's extension)"},
    {"--steps", "train until step N (default: the schedule's\n"
                "steps for cosine, else 1000)"},
    {"--batch", "examples per step (default 16); under mpirun,\n"
                "per process"},
    {"--seq", "positions per example (default: the model's\n"
              "limit, else 128)"},
    {"--seed", "data order and dropout seed (default 0)"},
    {"--min-count", "tagged text: words seen fewer than N times\n"
                    "train their unknown-word class (default 2)"},
    {"-o", "the trained weights (safetensors)"},
    {"--save-every", "also save a checkpoint every N steps"},
    {"--checkpoint", "where (default: OUT with .ckpt.safetensors)"},
    {"--resume", "continue a checkpoint, exactly"},
    {"--log", "the loss CSV (default: OUT with .csv); the\n"
              "loss plot goes beside it, with .svg"},
    {"--eval-data", "held-out data: its loss is logged and plotted\n"
                    "beside the training loss"},
    {"--eval-every", "evaluate --eval-data every N steps (default:\n"
                     "a tenth of the run) and at the end"},
    {"--lr", NULL},
    {"--beta1", NULL},
    {"--beta2", NULL},
    {"--eps", NULL},
    {"--weight-decay", NULL},
    {"--clip-norm", "override the train { } values"},
    {"--schedule", "constant, cosine or warmup_rsqrt"},
    {"--warmup", "warmup steps of cosine and warmup_rsqrt"},
    {"--schedule-steps", "the step cosine decays to 0 at"},
    {"--d-model", "warmup_rsqrt's d_model"},
    {"--tokenizer", "text: GPT-2's tokenizer (encoder.json,\n"
                    "vocab.bpe) instead of bytes"},
    {"--shard-optimizer", "under mpirun: each process keeps and updates\n"
                          "its share of Adam's moments (ZeRO-1)"},
    {NULL, NULL}};

static const cli_command_option EVAL_OPTIONS[] = {
    {"-w", "weights (safetensors: F32, BF16 or F16)"},
    {"--ignore-extra", "skip the tensors of -w the model does not have\n"
                       "(listed on standard error)"},
    {"--data", "the data, as for train"},
    {"--format", "text, tokens, tagged or pairs"},
    {"--batch", "examples per call (default 16)"},
    {"--seq", "positions per example (as for train)"},
    {"--entry", "the loss fn (default: train { loss })"},
    {"--tokenizer", "text: GPT-2's tokenizer, as for train"},
    {NULL, NULL}};

static const cli_command_option TOKENIZE_OPTIONS[] = {
    {"--tokenizer", "the directory of encoder.json and vocab.bpe"},
    {"--text", "the text to tokenize"},
    {"--data", "or a text file to tokenize"},
    {"--ids", "or ids to decode, separated by spaces"},
    {NULL, NULL}};

static const cli_command_option ATTENTION_OPTIONS[] = {
    {"-w", "weights (safetensors: F32, BF16 or F16)"},
    {"--ignore-extra", "skip the tensors of -w the model does not have\n"
                       "(listed on standard error)"},
    {"--prompt", "the text whose attention is shown"},
    {"--layer", "the layer, counted from 0 (default 0)"},
    {"--head", "the head, counted from 0 (default 0)"},
    {"--entry", "the entry point giving the weights (default\n"
                "attention_weights)"},
    {"-o", "also draw the weights as an SVG heat map"},
    {"--tokenizer", "GPT-2's tokenizer (encoder.json, vocab.bpe)\n"
                    "instead of bytes"},
    {NULL, NULL}};

static const cli_command COMMANDS[] = {
    {"info", "the model, its entry points and parameters", "",
     "Prints the model's name, target, entry points with their argument\n"
     "types (symbolic dims by name), every parameter with its shape and\n"
     "initialiser, and the total parameter count.\n",
     INFO_OPTIONS, attn_cmd_info},
    {"init", "write initial weights", "[--seed N] -o W.safetensors",
     "Writes initial weights, drawn per each parameter's initialiser;\n"
     "the same seed gives the same file on any number of threads.\n",
     INIT_OPTIONS, attn_cmd_init},
    {"forward", "run an entry point on .npy inputs",
     "-w W.safetensors --in ARG=FILE.npy ... [--entry NAME] -o OUT.npy",
     "Runs an entry point on .npy inputs and writes its results as .npy:\n"
     "to OUT for one result, to OUT.0.npy, OUT.1.npy, ... for several\n"
     "(a trailing .npy of OUT is moved after the index).\n",
     FORWARD_OPTIONS, attn_cmd_forward},
    {"generate", "generate text, byte by byte or token by token",
     "-w W.safetensors --prompt TEXT [--tokens N] [--temperature X]\n"
     "                  [--top-k K] [--top-p P] [--seed N] [--ids-out "
     "IDS.npy]\n"
     "                  [--tokenizer DIR]",
     "Generates text byte by byte (or, with --tokenizer, GPT-2 token by\n"
     "token), writing the prompt and then each new token's text to\n"
     "standard output as it is produced. An encoder-decoder model (encode\n"
     "and decode) takes the prompt as its source and writes only the\n"
     "target it generates, from the --bos token.\n",
     GENERATE_OPTIONS, attn_cmd_generate},
    {"grad", "the loss and its gradient for every parameter",
     "-w W.safetensors --in ARG=FILE.npy ... [--entry NAME] [--seed N]\n"
     "              -o GRADS.safetensors",
     "Runs the gradient entry point NAME_grad of a loss fn on .npy inputs,\n"
     "prints the loss and writes d loss / d parameter for every parameter,\n"
     "under the parameter's name, as safetensors.\n",
     GRAD_OPTIONS, attn_cmd_grad},
    {"train", "train the weights on a data file",
     "-w W.safetensors --data DATA [--steps N] [--batch B] [--seq T]\n"
     "               [--lr X] [--seed N] [--save-every N] [--resume CKPT]\n"
     "               -o W2.safetensors",
     "Trains with the model's train_step entry point, starting from -w (or\n"
     "from a checkpoint with --resume), and writes the weights to -o, a\n"
     "checkpoint (weights and optimizer state) and a CSV of the loss curve.\n"
     "Defaults come from the model's train { } section (see 'info').\n"
     "See docs/Training.md.\n",
     TRAIN_OPTIONS, attn_cmd_train},
    {"eval", "mean loss and perplexity on a data file",
     "-w W.safetensors --data DATA [--batch B] [--seq T] [--entry NAME]",
     "Computes the mean loss per scored position (and its exp, the\n"
     "perplexity) of the loss fn over every example of DATA, without\n"
     "dropout.\n",
     EVAL_OPTIONS, attn_cmd_eval},
    {"attention", "the attention weights of one head on a prompt",
     "-w W.safetensors --prompt TEXT [--layer L] [--head H] [-o MAP.svg]\n"
     "                   [--tokenizer DIR]",
     "Prints the attention weights of one layer and head on the prompt as a\n"
     "table, a row per query token and a column per key token (each row\n"
     "sums to 1), and with -o draws them as an SVG heat map. The weights\n"
     "come from the entry point attention_weights, which attnc derives\n"
     "from forward (f32[L, B, H, T, S], without dropout).\n",
     ATTENTION_OPTIONS, attn_cmd_attention},
    {"tokenize", "GPT-2's token ids of a text, or the text of ids",
     "--tokenizer DIR (--text TEXT | --data FILE | --ids IDS)",
     "Prints the ids GPT-2's byte-level BPE tokenizer gives a text (from\n"
     "--text or a file), space-separated on one line; with --ids, writes\n"
     "the text of the ids instead. DIR holds encoder.json and vocab.bpe\n"
     "(scripts/fetch-gpt2-tokenizer.py fetches them).\n",
     TOKENIZE_OPTIONS, attn_cmd_tokenize},
    {NULL, NULL, NULL, NULL, NULL, NULL}};

static void print_usage(FILE *f, const char *prog, const attn_model_info *m) {
  fprintf(f, "usage: %s <command> [options]\n\n", prog);
  fprintf(f, "Runs model '%s' (compiled by attnc for %s).\n\ncommands:\n",
          m->name, m->target ? m->target : "?");
  for (const cli_command *c = COMMANDS; c->name; ++c)
    fprintf(f, "  %-10s%s\n", c->name, c->summary);
  fprintf(f,
          "\nEvery command takes --threads N (default: all cores); "
          "'%s COMMAND --help'\ndescribes its options.\n",
          prog);
}

/* The options before any is parsed. */
static void init_cli(cli *c, const char *argv0, const attn_model_info *m) {
  memset(c, 0, sizeof *c);
  const char *prog = argv0 ? argv0 : "model";
  const char *slash = strrchr(prog, '/');
  c->prog = slash ? slash + 1 : prog;
  c->model = m;
  c->tokens = 100;
  c->format = ATTN_DATA_AUTO;
  c->schedule = -1;
  c->eos = -1;
  c->temperature = 1.0;
  c->top_p = 1.0;
}

int attn_main(int argc, char **argv, const attn_model_info *model) {
  cli c;
  init_cli(&c, argc > 0 ? argv[0] : NULL, model);
  if (!model || !model->name) {
    fprintf(stderr, "error: no model table\n");
    return EXIT_INPUT;
  }
  if (argc < 2) {
    print_usage(stderr, c.prog, model);
    return EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    print_usage(stdout, c.prog, model);
    return EXIT_OK;
  }
  const cli_command *cmd = COMMANDS;
  while (cmd->name && strcmp(cmd->name, argv[1]) != 0)
    ++cmd;
  if (!cmd->name) {
    const char *meant = attn_cli_closest(argv[1], COMMANDS,
                                         (size_t)(cmd - COMMANDS), sizeof *cmd);
    if (meant)
      return attn_cli_usage_error(
          &c, "unknown command '%s'; did you mean '%s'?", argv[1], meant);
    return attn_cli_usage_error(&c, "unknown command '%s'", argv[1]);
  }
  c.command = cmd->name;
  int st = attn_cli_parse_options(&c, cmd, argc, argv, 2);
  if (st >= 0)
    return st;
  return cmd->run(&c);
}
