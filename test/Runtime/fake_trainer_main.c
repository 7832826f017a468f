/*===- fake_trainer_main.c - Standalone executables of the trainable fakes -===*
 *
 * Exactly the `main` that `attnc build` emits, around one model of
 * fake_trainer.c (chosen with -DFAKE_MODEL=...).
 *
 *===----------------------------------------------------------------------===*/

#include "attn/cli.h"
#include "fake_trainer.h"

int main(int argc, char **argv) { return attn_main(argc, argv, &FAKE_MODEL); }
