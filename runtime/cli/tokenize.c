/*===- tokenize.c - GPT-2's tokenizer on the command line ------------------===*
 *
 * `--tokenizer DIR` makes generate, train and eval read and write text as
 * GPT-2's byte-level BPE tokens (runtime/src/bpe.c) instead of bytes; this
 * file loads it for them, checks that a model's vocabulary holds its
 * tokens, and holds the tokenize command, which shows what the tokenizer
 * makes of a text (or a text of ids).
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"

int attn_cli_load_tokenizer(const cli *c, attn_bpe **bpe) {
  *bpe = NULL;
  if (c->tokenizer && attn_bpe_load(c->tokenizer, bpe))
    return attn_cli_input_error();
  return -1;
}

int attn_cli_check_vocab(const cli *c, const attn_bpe *bpe, int64_t vocab) {
  if (!bpe || vocab <= 0 || vocab >= attn_bpe_vocab_size(bpe))
    return -1;
  return attn_cli_input_errorf("model '%s' has a vocabulary of %lld tokens, "
                               "fewer than the %d of the tokenizer in %s",
                               c->model->name, (long long)vocab,
                               (int)attn_bpe_vocab_size(bpe), c->tokenizer);
}

/* Reads the whole of `path` (its size in *len) into a buffer to free. */
static int read_text(const char *path, char **text, size_t *len) {
  FILE *f;
  int64_t size;
  if (attn_file_open(path, &f, &size))
    return attn_cli_input_error();
  *text = malloc((size_t)size + 1);
  if (!*text) {
    fclose(f);
    return attn_cli_input_errorf("%s: out of memory", path);
  }
  attn_status st = attn_file_read(f, path, *text, (size_t)size);
  fclose(f);
  if (st) {
    free(*text);
    return attn_cli_input_error();
  }
  *len = (size_t)size;
  return -1;
}

/* Prints the ids of text[0 .. len) on one line. */
static int print_ids(const attn_bpe *bpe, const char *text, size_t len) {
  int32_t *ids = malloc(sizeof *ids * (len + 1));
  size_t n = 0;
  if (!ids)
    return attn_cli_input_errorf("out of memory");
  if (attn_bpe_encode(bpe, text, len, ids, &n)) {
    free(ids);
    return attn_cli_input_error();
  }
  for (size_t i = 0; i < n; ++i)
    printf(i ? " %d" : "%d", (int)ids[i]);
  putchar('\n');
  free(ids);
  return -1;
}

/* Parses --ids, decimal ids separated by white space, into *ids (to free). */
static int parse_ids(const cli *c, int32_t **ids, size_t *n) {
  size_t cap = strlen(c->ids) / 2 + 1, count = 0;
  *ids = malloc(sizeof **ids * cap);
  if (!*ids)
    return attn_cli_input_errorf("out of memory");
  for (const char *p = c->ids;;) {
    p += strspn(p, " \t\r\n");
    if (!*p)
      break;
    size_t k = strcspn(p, " \t\r\n");
    char *end;
    long v = strtol(p, &end, 10);
    if (end != p + k || *p == '-' || *p == '+' || v > INT32_MAX) {
      free(*ids);
      *ids = NULL;
      return attn_cli_usage_error(c, "--ids takes token ids separated by "
                                     "spaces, not '%.*s'",
                                  (int)k, p);
    }
    (*ids)[count++] = (int32_t)v;
    p += k;
  }
  *n = count;
  return -1;
}

/* Writes the text of ids[0 .. n) to standard output, raw. */
static int print_text(const attn_bpe *bpe, const int32_t *ids, size_t n) {
  size_t len;
  int st = -1;
  /* The first pass measures (and checks every id), the second writes. */
  char *text = NULL;
  if (attn_bpe_decode(bpe, ids, n, NULL, 0, &len)) {
    st = attn_cli_input_error();
  } else if (!(text = malloc(len + 1))) {
    st = attn_cli_input_errorf("out of memory");
  } else {
    attn_bpe_decode(bpe, ids, n, text, len, &len);
    fwrite(text, 1, len, stdout);
  }
  if (st < 0 && isatty(STDOUT_FILENO))
    putchar('\n');
  free(text);
  return st;
}

int attn_cmd_tokenize(cli *c) {
  if (!c->tokenizer)
    return attn_cli_usage_error(c, "missing --tokenizer DIR");
  if (!!c->text + !!c->data + !!c->ids != 1)
    return attn_cli_usage_error(c, "give one of --text TEXT, --data FILE and "
                                   "--ids IDS");
  int32_t *ids = NULL;
  size_t n = 0;
  int st = c->ids ? parse_ids(c, &ids, &n) : -1;
  attn_bpe *bpe = NULL;
  if (st < 0)
    st = attn_cli_load_tokenizer(c, &bpe);
  if (st >= 0) {
    free(ids);
    return st;
  }
  if (c->ids) {
    st = print_text(bpe, ids, n);
  } else if (c->data) {
    char *text;
    size_t len;
    st = read_text(c->data, &text, &len);
    if (st < 0) {
      st = print_ids(bpe, text, len);
      free(text);
    }
  } else {
    st = print_ids(bpe, c->text, strlen(c->text));
  }
  free(ids);
  attn_bpe_destroy(bpe);
  return st < 0 ? EXIT_OK : st;
}
