#!/bin/sh
# Regenerates data/kjv-train.txt (Genesis and Exodus) and data/kjv-valid.txt
# (Ruth), the public-domain English
# text shipped for the training demo and tests: the King James Version
# (1611; its copyright has long expired) as Debian's bible-kjv package
# prints it, one verse per line, without the verse references.
#
# usage: scripts/make-kjv-text.sh [OUTDIR]     (default: data/)
# needs: the `bible` program (apt-get install bible-kjv)
set -eu
out=${1:-$(dirname "$0")/../data}
command -v bible >/dev/null 2>&1 || {
  echo "error: 'bible' not found; install Debian's bible-kjv package" >&2
  exit 1
}
verses() {
  # -l0: no line wrapping. Drop the chapter headings and verse numbers and
  # keep one blank line between chapters.
  bible -l0 "$1" | sed -E -e '/^[1-3]? ?[A-Z][a-z]+ [0-9]+$/d' \
      -e 's/^ *[0-9]+ //' | cat -s | sed -e '1{/^$/d}'
}
{ verses "Genesis1:1-50:26"; echo; verses "Exodus1:1-40:38"; } \
    > "$out/kjv-train.txt"
verses "Ruth1:1-4:22" > "$out/kjv-valid.txt"
