"""Checks the loss plot `train` writes beside its CSV log.

  check_loss_plot.py PLOT.svg LOG.csv TRAIN_POINTS HELDOUT_POINTS

The plot must parse as XML and hold one polyline per series: "training
loss" with TRAIN_POINTS points, and "held-out loss" with HELDOUT_POINTS
(0: no such series); the CSV must have as many rows, and as many held-out
losses in its eval_loss column. The points' heights must order as the
losses do (a lower loss is drawn lower: a larger y in SVG), and the axes must be labelled with
ticks. Prints "ok" when all hold.
"""

import csv
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def main():
    plot, log, train_points, heldout_points = sys.argv[1:]
    expected = {"training loss": int(train_points),
                "held-out loss": int(heldout_points)}
    failures = []
    root = ET.parse(plot).getroot()
    series = {p.get("data-name"): [tuple(map(float, xy.split(",")))
                                   for xy in p.get("points").split()]
              for p in root.iter(NS + "polyline") if p.get("class") == "series"}
    with open(log, newline="") as f:
        rows = list(csv.DictReader(f))
    columns = {"training loss": [float(r["loss"]) for r in rows],
               "held-out loss": [float(r["eval_loss"]) for r in rows
                                 if r.get("eval_loss")]}
    for name, count in expected.items():
        points = series.get(name, [])
        if count == 0:
            if name in series or "eval_loss" in (rows[0] if rows else {}):
                failures.append(f"{name}: present, but no held-out data")
            continue
        if len(points) != count or len(columns[name]) != count:
            failures.append(f"{name}: {len(points)} points and "
                            f"{len(columns[name])} CSV values, not {count}")
            continue
        losses = columns[name]
        for a in range(count):
            for b in range(count):
                if losses[a] < losses[b] and not points[a][1] > points[b][1]:
                    failures.append(f"{name}: point {a} is not below {b}")
    ticks = {c: [t.text for t in root.iter(NS + "text") if t.get("class") == c]
             for c in ("x-tick", "y-tick", "x-axis", "y-axis")}
    if len(ticks["x-tick"]) < 2 or len(ticks["y-tick"]) < 2:
        failures.append(f"too few ticks: {ticks}")
    if ticks["x-axis"] != ["step"] or not ticks["y-axis"][0].startswith("loss"):
        failures.append(f"axis labels: {ticks['x-axis']}, {ticks['y-axis']}")
    for message in failures:
        print("FAIL:", message)
    print("failed" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
