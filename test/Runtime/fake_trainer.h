/*===- fake_trainer.h - Hand-written trainable stand-ins for compiled models ===*
 *
 * Test the runtime's training commands against the exact ABI attnc emits
 * without needing the compiler: see fake_trainer.c.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_TEST_FAKE_TRAINER_H
#define ATTN_TEST_FAKE_TRAINER_H

#include "attn/abi.h"

#define BIGRAM_VOCAB 256
#define CLASSIFIER_CLASSES 3

extern const attn_model_info fake_bigram_model_info;
extern const attn_model_info fake_classifier_model_info;

#endif /* ATTN_TEST_FAKE_TRAINER_H */
