/*===- data.h - Training data: formats, vocabularies and batches ----------===*
 *
 * Not installed and not part of the API of libattncli: what `train` and
 * `eval` read with --data (docs/Training.md). A dataset is a list of
 * examples, each turned into one row of every argument of the loss fn;
 * batches are sets of example indices, drawn by epoch in a seeded order.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_CLI_DATA_H
#define ATTN_CLI_DATA_H

#include "internal.h"

typedef enum attn_data_format {
  ATTN_DATA_AUTO = -1,
  ATTN_DATA_TEXT = 0,   /* UTF-8 text: bytes, or GPT-2's BPE tokens */
  ATTN_DATA_TOKENS = 1, /* .npy token ids */
  ATTN_DATA_TAGGED = 2, /* word<TAB>tag lines, blank line between sentences */
  ATTN_DATA_PAIRS = 3   /* input<TAB>target lines */
} attn_data_format;

/* How examples become the loss fn's arguments (in its argument order). */
typedef enum attn_data_layout {
  ATTN_LAYOUT_LM,         /* tokens [B, T], targets [B, T] = tokens shifted */
  ATTN_LAYOUT_TAGGER,     /* words [B, T], tags [B, T]; padding 0 */
  ATTN_LAYOUT_CLASSIFIER, /* text [B, T] (padding 0), label [B] */
  ATTN_LAYOUT_SEQ2SEQ     /* src [B, S], tgt_in [B, T], tgt_out [B, T] */
} attn_data_layout;

/* id -> string, and the reverse through an open-addressing table. */
typedef struct attn_vocab {
  char **words;
  int32_t n, cap;
  int32_t *table; /* ids + 1, 0 = empty */
  size_t table_size;
} attn_vocab;

typedef struct attn_dataset {
  const char *path;
  attn_data_format format;
  attn_data_layout layout;
  int64_t bytes;     /* the file's size */
  uint64_t hash;     /* attn_checksum of the file */
  int64_t seq;       /* T: the window (LM) or the longest row */
  /* LM: the token stream; example k is the window starting at k * seq of
   * seq + 1 tokens (the last one of eval may be shorter). */
  int32_t *stream;
  int64_t stream_len;
  /* Other layouts: ragged fields, example k's field f is
   * ids[f][off[f][k] .. off[f][k + 1]). */
  int64_t *off[2];
  int32_t *ids[2];
  int64_t num_examples;
  int lm_rows;       /* LM from .npy rows: example k is row k */
  /* Vocabularies ("words" and "tags"; "inputs" and "labels"; "words"),
   * empty where the field is byte-level or numeric. */
  attn_vocab vocab[2];
  int byte_level[2];   /* field f is bytes (vocab unused) */
  int numeric_labels;  /* classifier labels are the integers themselves */
  int32_t bos, eos;    /* seq2seq specials */
  int64_t unknown_targets; /* tags/labels not in a given vocabulary: 0 */
} attn_dataset;

/* What the model's loss fn looks like, and what limits its ids have. */
typedef struct attn_data_spec {
  const attn_model_info *model;
  const attn_entry_info *entry;  /* the loss fn, or train_step */
  attn_data_format format;       /* ATTN_DATA_AUTO: from the extension */
  int64_t seq;                   /* --seq, 0: the default */
  const attn_json *vocab;        /* "attn.vocab" of the weights, or NULL */
  const char *vocab_path;        /* the file it came from, for messages */
  int eval;                      /* keep every position (eval) */
  int64_t min_count;             /* tagged words rarer than this in the
                                    training file are unknown (0: 2) */
  const attn_bpe *tokenizer;     /* text as GPT-2 tokens, or NULL: bytes */
  const char *tokenizer_dir;     /* where it came from, for messages */
} attn_data_spec;

/* Reads `path` per `spec`: checks the format against the loss fn's
 * arguments, builds or adopts the vocabularies and tokenizes every example.
 * Errors name the file (and the line). Free with attn_data_free. */
attn_status attn_data_open(attn_dataset *d, const char *path,
                           const attn_data_spec *spec);
void attn_data_free(attn_dataset *d);

const char *attn_data_format_name(attn_data_format f);
/* "text", "tokens", "tagged", "pairs" -> the format; -2 if none. */
int attn_data_format_parse(const char *s);

/* Examples per epoch when training (full-length windows only for LM). */
int64_t attn_data_train_examples(const attn_dataset *d);
/* Examples eval covers (every position, the last LM window maybe short). */
int64_t attn_data_eval_examples(const attn_dataset *d);
/* Length of an LM example (its number of targets). */
int64_t attn_data_lm_length(const attn_dataset *d, int64_t k);

/* Builds one batch from examples idx[0 .. count): one tensor per INPUT
 * argument of `entry` in its order (owned; release them), and the number of
 * positions that count in the loss (targets other than padding). */
attn_status attn_data_batch(const attn_dataset *d, const attn_entry_info *e,
                            const int64_t *idx, int64_t count,
                            attn_tensor *out, int64_t *num_targets);

/* Example indices of batch `batch` (0-based within the epoch) of epoch
 * `epoch` in the order seeded by `shuffle_seed`: a Fisher-Yates permutation
 * of the training examples drawn with Philox4x32-10. `perm` has room for
 * attn_data_train_examples(d) entries and is recomputed when *perm_epoch
 * differs from `epoch`. */
void attn_data_epoch_order(const attn_dataset *d, uint64_t shuffle_seed,
                           int64_t epoch, int64_t *perm);

/* Appends the vocabularies as a JSON object (the "attn.vocab" metadata):
 * {"format": F, "<role>": [strings...], ...}. */
int attn_data_vocab_json(const attn_dataset *d, attn_buf *b);

#endif /* ATTN_CLI_DATA_H */
