/*===- test_alloc.c - Aligned allocation and huge pages ----------------------===*
 *
 * attn_aligned_malloc: 64-byte alignment, size 0, overflow, and for buffers
 * of 2 MiB or more 2 MiB alignment with the transparent-huge-page advice
 * (checked in /proc/self/smaps when the kernel's THP mode is `madvise` or
 * `always` and smaps reports THPeligible; skipped with a note otherwise).
 *
 *===----------------------------------------------------------------------===*/

#define _DEFAULT_SOURCE
#include <stdint.h>

#include "check.h"
#include "../../runtime/src/internal.h"

/* The smaps field `name` (in kB) of the mapping that holds `p`, or -1. */
static long smaps_field(const void *p, const char *name) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f)
    return -1;
  char line[512];
  int inside = 0;
  long value = -1;
  size_t len = strlen(name);
  uintptr_t addr = (uintptr_t)p;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') &&
        line[0] != ' ') {
      inside = addr >= lo && addr < hi;
      continue;
    }
    if (inside && !strncmp(line, name, len) && line[len] == ':') {
      value = atol(line + len + 1);
      break;
    }
  }
  fclose(f);
  return value;
}

static int thp_mode_allows_madvise(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f)
    return 0;
  char mode[128] = {0};
  int ok = fgets(mode, sizeof mode, f) != NULL;
  fclose(f);
  return ok && (strstr(mode, "[madvise]") || strstr(mode, "[always]"));
}

int main(void) {
  void *small = attn_aligned_malloc(100);
  CHECK(small && (uintptr_t)small % 64 == 0);
  free(small);
  void *empty = attn_aligned_malloc(0);
  CHECK(empty != NULL);
  free(empty);
  CHECK(attn_aligned_malloc(SIZE_MAX - 10) == NULL);

  /* 3 MiB + 1: rounded up to whole 2 MiB pages, 2 MiB aligned. */
  size_t size = 3 * ((size_t)1 << 20) + 1;
  char *big = attn_aligned_malloc(size);
  CHECK(big && (uintptr_t)big % ATTN_HUGE_PAGE == 0);
  if (big) {
    memset(big, 1, size);
    CHECK(big[size - 1] == 1);
    long advised = smaps_field(big, "THPeligible");
    if (thp_mode_allows_madvise() && advised != -1) {
      CHECK(advised == 1);
    } else {
      fprintf(stderr, "note: transparent huge pages are off (or smaps has no "
                      "THPeligible); the advice is not checked\n");
    }
    free(big);
  }
  return check_failures != 0;
}
