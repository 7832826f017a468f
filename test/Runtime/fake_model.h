/*===- fake_model.h - A hand-written stand-in for a compiled model ---------===*
 *
 * Tests the runtime against the exact ABI attnc emits without needing the
 * compiler: see fake_model.c.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_TEST_FAKE_MODEL_H
#define ATTN_TEST_FAKE_MODEL_H

#include "attn/abi.h"

#define FAKE_VOCAB 16
#define FAKE_DIM 4
/* The elements of fake_lm's `denormal` result. */
#define FAKE_DENORMAL_ELEMENTS 64

extern const attn_model_info fake_lm_model_info;

/* The arena the last call of fake_lm's `scratch` used (the caller's or its
 * own), and how many calls allocated their own. */
extern void *fake_scratch_arena;
extern int fake_scratch_fallbacks;

#endif /* ATTN_TEST_FAKE_MODEL_H */
