#!/bin/sh
# Runs "$@" as given, except that on rank 1 of an mpirun job the value of
# --data becomes a file that does not exist: one process fails alone.
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then
  prev=
  for a; do
    shift
    if [ "$prev" = --data ]; then set -- "$@" missing-on-rank-1.txt; else set -- "$@" "$a"; fi
    prev=$a
  done
fi
exec "$@"
