/*===- fpmode.h - The floating-point mode generated code runs in ----------===*
 *
 * Compiled models run with denormal floats flushed to zero (FTZ) and read as
 * zero (DAZ), as PyTorch does with torch.set_flush_denormal(True): a
 * saturated softmax's backward otherwise produces denormals, and on some
 * CPUs each operation on one costs a hundred cycles. The caller's own mode
 * is restored when an entry point returns, so an application embedding a
 * model keeps IEEE denormals in its own code.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_FPMODE_H
#define ATTN_FPMODE_H

/* Sets FTZ and DAZ on the calling thread; returns the mode to restore. */
unsigned attn_fp_enter(void);

/* Restores the mode attn_fp_enter returned. */
void attn_fp_leave(unsigned saved);

#endif /* ATTN_FPMODE_H */
