#!/bin/sh
# Runs "$@"; on rank 1 of an mpirun job, the process kills itself with
# SIGKILL once the file $KILL_AFTER (a checkpoint) exists. After `exec`,
# the trainer has this shell's pid, $$.
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then
  (while [ ! -f "$KILL_AFTER" ]; do sleep 0.05; done; kill -9 $$) &
fi
exec "$@"
