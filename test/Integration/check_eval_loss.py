"""The held-out loss `train --eval-data` logged last (the eval_loss column of
its CSV) against `eval`'s `loss:` line on the same weights and data, to 1e-5
relative.

  check_eval_loss.py LOG.csv EVAL_OUTPUT.txt
"""

import csv
import sys


def main():
    rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["eval_loss"]]
    if not rows:
        print("FAIL: no held-out loss in the log")
        return 1
    logged = float(rows[-1]["eval_loss"])
    lines = [l for l in open(sys.argv[2]) if l.startswith("loss:")]
    evaluated = float(lines[0].split()[1])
    if abs(logged - evaluated) > 1e-5 * abs(evaluated):
        print(f"FAIL: held-out loss {logged} but eval gives {evaluated}")
        return 1
    print(f"ok: held-out loss {logged:.6f} equals eval's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
