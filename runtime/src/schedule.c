/*===- schedule.c - Learning-rate schedules and the hyperparameter vector -===*
 *
 * The runtime evaluates the schedule of `train { }` in double on the host and
 * passes each step's rate to train_step in its ATTN_ARG_HYPER vector, so a
 * compiled model never hard-codes its rate and the binary's flags override
 * every value without recompiling.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>

#include "internal.h"

double attn_schedule_lr(const attn_train_info *t, int64_t step) {
  double s = (double)step, w = (double)t->warmup;
  switch (t->schedule) {
  case ATTN_SCHEDULE_CONSTANT:
    return t->lr;
  case ATTN_SCHEDULE_COSINE: {
    if (t->warmup > 0 && step <= t->warmup)
      return t->lr * s / w;
    if (step >= t->total_steps)
      return 0.0;
    double progress = (s - w) / ((double)t->total_steps - w);
    return t->lr * 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
  }
  case ATTN_SCHEDULE_WARMUP_RSQRT: {
    double scale = t->d_model > 0 ? 1.0 / sqrt(t->d_model) : 1.0;
    double decay = 1.0 / sqrt(s);
    if (t->warmup > 0) {
      double ramp = s * pow(w, -1.5);
      decay = ramp < decay ? ramp : decay;
    }
    return t->lr * scale * decay;
  }
  }
  return NAN;
}

void attn_train_hyper(const attn_train_info *t, int64_t step, float *hyper) {
  hyper[ATTN_HYPER_LR] = (float)attn_schedule_lr(t, step);
  hyper[ATTN_HYPER_BETA1] = (float)t->beta1;
  hyper[ATTN_HYPER_BETA2] = (float)t->beta2;
  hyper[ATTN_HYPER_EPS] = (float)t->eps;
  hyper[ATTN_HYPER_WEIGHT_DECAY] = (float)t->weight_decay;
  hyper[ATTN_HYPER_CLIP_NORM] = (float)t->clip_norm;
  hyper[ATTN_HYPER_STEP] = (float)step;
}
