/*===- fake_model_main.c - The standalone executable of the fake model ----===*
 *
 * Exactly the `main` that `attnc build` emits, around fake_model.c.
 *
 *===----------------------------------------------------------------------===*/

#include "attn/cli.h"
#include "fake_model.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &fake_lm_model_info);
}
