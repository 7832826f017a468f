/*===- philox.c - The Philox4x32-10 counter-based random generator ---------===*
 *
 * Random numbers are a pure function of (key, counter) rather than of a
 * sequential state, so every parameter element and every sampling step can
 * draw its own numbers in any order on any thread and still reproduce the
 * same values for a seed (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC'11).
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

void attn_philox4x32_10(const uint32_t counter[4], const uint32_t key[2],
                        uint32_t out[4]) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = (uint64_t)M0 * c0;
    uint64_t p1 = (uint64_t)M1 * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += W0;
    k1 += W1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

double attn_u01(uint32_t hi, uint32_t lo) {
  /* 27 + 26 bits: every double in [0, 1) with spacing 2^-53. */
  uint64_t bits = ((uint64_t)(hi >> 5) << 26) | (uint64_t)(lo >> 6);
  return (double)bits * (1.0 / 9007199254740992.0);
}
