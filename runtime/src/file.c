/*===- file.c - Reading files and writing them atomically ------------------===*
 *
 * Outputs (weights, tensors, token ids) are written under a temporary name in
 * the destination's directory, fsync'ed, then renamed over the destination:
 * rename is atomic within a file system, so readers see the old file or the
 * whole new one, and a failure or a crash never leaves a torn file.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

attn_status attn_file_open(const char *path, FILE **f, int64_t *size) {
  *f = NULL;
  FILE *file = fopen(path, "rb");
  if (!file)
    return attn_fail(ATTN_ERR_IO, "%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(file), &st) != 0) {
    int err = errno;
    fclose(file);
    return attn_fail(ATTN_ERR_IO, "%s: %s", path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    fclose(file);
    return attn_fail(ATTN_ERR_IO, "%s: not a regular file", path);
  }
  *f = file;
  *size = (int64_t)st.st_size;
  return ATTN_OK;
}

attn_status attn_file_read(FILE *f, const char *path, void *buf, size_t n) {
  size_t got = n ? fread(buf, 1, n, f) : 0;
  if (got == n)
    return ATTN_OK;
  if (ferror(f))
    return attn_fail(ATTN_ERR_IO, "%s: read error: %s", path, strerror(errno));
  return attn_fail(ATTN_ERR_FORMAT, "%s: file is truncated", path);
}

/* Told apart by process id and this counter, the temporary files of two
 * writes never collide, even from two threads of one process writing next
 * to the same file: the counter is process-wide for that reason. */
static atomic_uint tmp_counter;

attn_status attn_atomic_open(attn_atomic_file *af, const char *path) {
  memset(af, 0, sizeof *af);
  size_t len = strlen(path);
  af->path = malloc(len + 1);
  af->tmp_path = malloc(len + 64);
  if (!af->path || !af->tmp_path) {
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  memcpy(af->path, path, len + 1);
  /* O_EXCL on a name unique to this process and call: no clobbering of a
   * stranger's file, and mode 0666 so the umask applies as for any file. */
  for (int attempt = 0; attempt < 100; ++attempt) {
    unsigned n = atomic_fetch_add(&tmp_counter, 1u);
    snprintf(af->tmp_path, len + 64, "%s.tmp.%ld.%u", path, (long)getpid(), n);
    int fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST)
      continue;
    if (fd < 0) {
      int err = errno;
      free(af->path);
      free(af->tmp_path);
      memset(af, 0, sizeof *af);
      return attn_fail(ATTN_ERR_IO, "%s: cannot create: %s", path,
                       strerror(err));
    }
    af->f = fdopen(fd, "wb");
    if (!af->f) {
      int err = errno;
      close(fd);
      unlink(af->tmp_path);
      free(af->path);
      free(af->tmp_path);
      memset(af, 0, sizeof *af);
      return attn_fail(ATTN_ERR_IO, "%s: %s", path, strerror(err));
    }
    return ATTN_OK;
  }
  attn_status st =
      attn_fail(ATTN_ERR_IO, "%s: cannot find a free temporary name", path);
  free(af->path);
  free(af->tmp_path);
  memset(af, 0, sizeof *af);
  return st;
}

attn_status attn_atomic_write(attn_atomic_file *af, const void *buf, size_t n) {
  if (n && fwrite(buf, 1, n, af->f) != n)
    return attn_fail(ATTN_ERR_IO, "%s: write error: %s", af->path,
                     strerror(errno));
  return ATTN_OK;
}

void attn_atomic_abort(attn_atomic_file *af) {
  if (af->f)
    fclose(af->f);
  if (af->tmp_path)
    unlink(af->tmp_path);
  free(af->tmp_path);
  free(af->path);
  memset(af, 0, sizeof *af);
}

attn_status attn_atomic_finish(attn_atomic_file *af) {
  attn_status st = ATTN_OK;
  if (fflush(af->f) != 0 || fsync(fileno(af->f)) != 0)
    st = attn_fail(ATTN_ERR_IO, "%s: write error: %s", af->path,
                   strerror(errno));
  int closed = fclose(af->f);
  af->f = NULL;
  if (!st && closed != 0)
    st = attn_fail(ATTN_ERR_IO, "%s: write error: %s", af->path,
                   strerror(errno));
  if (st)
    attn_atomic_abort(af);
  return st;
}

/* Makes the rename itself durable; failure here only weakens durability
 * after a power loss, so it is not reported. */
static void sync_parent_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
  if (!dir)
    return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

attn_status attn_atomic_rename(attn_atomic_file *af) {
  if (rename(af->tmp_path, af->path) != 0) {
    attn_status st = attn_fail(ATTN_ERR_IO, "%s: cannot rename %s: %s",
                               af->path, af->tmp_path, strerror(errno));
    attn_atomic_abort(af);
    return st;
  }
  sync_parent_dir(af->path);
  free(af->tmp_path);
  free(af->path);
  memset(af, 0, sizeof *af);
  return ATTN_OK;
}

attn_status attn_atomic_commit(attn_atomic_file *af) {
  attn_status st = attn_atomic_finish(af);
  if (st)
    return st;
  return attn_atomic_rename(af);
}
