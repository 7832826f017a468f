/*===- half.c - bf16 and f16 to and from f32 -------------------------------===*
 *
 * The 16-bit floats the runtime meets: the bf16 copy of a model built with
 * --weights bf16 (weights.c), and the BF16 and F16 tensors of Hugging Face
 * checkpoints (safetensors.c), widened to the f32 parameters.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <string.h>

#include "internal.h"

uint16_t attn_f32_to_bf16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) /* NaN stays a (quiet) NaN */
    return (uint16_t)((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest even */
  return (uint16_t)(bits >> 16);
}

float attn_bf16_to_f32(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &wide, sizeof value);
  return value;
}

float attn_f16_to_f32(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0) /* zero and subnormals: mantissa * 2^-24 */
    magnitude = ldexpf((float)mantissa, -24);
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = ldexpf((float)(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}
