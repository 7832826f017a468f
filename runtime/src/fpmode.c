/*===- fpmode.c - The floating-point mode generated code runs in ----------===*
 *
 * On x86 the mode is the MXCSR register: bit 15 flushes denormal results to
 * zero, bit 6 reads denormal operands as zero. Elsewhere the mode is left
 * as it is.
 *
 *===----------------------------------------------------------------------===*/

#include "fpmode.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

enum { MXCSR_DAZ = 1u << 6, MXCSR_FTZ = 1u << 15 };

unsigned attn_fp_enter(void) {
  unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | MXCSR_DAZ | MXCSR_FTZ);
  return saved;
}

void attn_fp_leave(unsigned saved) { _mm_setcsr(saved); }
#else
unsigned attn_fp_enter(void) { return 0; }
void attn_fp_leave(unsigned saved) { (void)saved; }
#endif
