#!/usr/bin/env python3
"""Compare cachelayout's answers with an exact CP-SAT model.

Reads the JSON lines written by the `exact_bench` example
(`layout-core/examples/exact_bench.rs`), solves every instance with Google
OR-tools CP-SAT, and prints per size band: instances, optimum reached,
optimum proven (cachelayout proved its size minimal), false claims (a
size claimed minimal that the reference beats, or below the reference's
proven bound: must be 0), median and p95 time of both.

The model (independent of the solver's code):

- integer start x_i of every field, a multiple of its alignment;
- no two fields overlap (interval no-overlap);
- the struct size S is a multiple of the struct alignment A and covers
  every field;
- the hard rule: two fields of different non-zero colours never share a
  cache line at any phase the placement allows. For a pair (i, j) a boolean
  says which comes first; if i does, for every phase p
  (p = offset % L in phase mode, every multiple of A below L in aligned
  mode) the line of i's last byte is before the line of j's first byte:
  floor((x_i + s_i - 1 + p) / L) < floor((x_j + p) / L).

The kernel-like set (`exact_bench --set kernel`) adds what real structs
have: pinned members (x_i fixed at the declared offset), segments every
layout keeps in order (a boundary variable B between consecutive segments:
every field of the lower ones ends at or before B, every field of the
higher ones starts at or after it; a line-aligned zero-size wall is a
segment of its own), and a flexible array tail (zero bytes, after every
other field, its class applying to the line holding its offset: one byte
for the hard rule). As in C, the first member of a layout sits at offset 0:
the smallest start is 0.

In aligned mode every struct alignment from the natural one up to the line
is tried; the optimum is the smallest size over them. The size cachelayout
found (verified by its verifier) bounds the horizon: a geometry whose
optimum is larger cannot change the minimum.

    pip install ortools
    python3 tools/exact_reference/compare.py OURS.jsonl [--cache REF.json] [--time-limit 20]

`--cache` keeps the reference answers (keyed by instance), so a second run
(after a solver change) only re-reads cachelayout's side;
`--retry-unproven-up-to N` solves again, with a larger `--time-limit`, the
cached references of up to N fields that were not proven.

Columns: `ref opt` counts the instances whose optimum CP-SAT proved, and
`reached` / `proven` are among those (cachelayout's size equal to it, and
proven minimal by cachelayout); `false` counts sizes cachelayout claimed
minimal that CP-SAT beat, or below CP-SAT's proven bound (must be 0);
`known` counts the instances whose optimum either side proved, `ours` those
only cachelayout proved (where CP-SAT, in its time limit, found no smaller
layout: a smaller one would be a false claim); `beaten` counts those where
CP-SAT found a smaller layout than cachelayout's without proving it
optimal (misses the `reached` column cannot see).
"""

import argparse
import json
import statistics
import sys
import time

from ortools.sat.python import cp_model

WORKERS = 2


def natural_align(fields):
    return max([1] + [a for _, a, _ in fields])


def solve_geometry(fields, line, phases, align, horizon, time_limit,
                   pins=(), segments=None, tail=None):
    """Smallest size at struct alignment `align`, hard rule at `phases`.
    Returns (status, size or None, bound)."""
    m = cp_model.CpModel()
    n = len(fields)
    xs, ends, ivs = [], [], []
    for i, (s, a, _) in enumerate(fields):
        k = m.NewIntVar(0, max(0, (horizon - s) // a), f"k{i}")
        x = m.NewIntVar(0, horizon, f"x{i}")
        m.Add(x == a * k)
        xs.append(x)
        ends.append(x + s)
        ivs.append(m.NewFixedSizeIntervalVar(x, s, f"iv{i}"))
    m.AddNoOverlap(ivs)
    m.AddMinEquality(m.NewConstant(0), xs)
    for i, off in pins:
        m.Add(xs[i] == off)
    if segments is not None:
        levels = sorted(set(segments))
        for lv in levels[1:]:
            b = m.NewIntVar(0, horizon, f"B{lv}")
            for i in range(n):
                if segments[i] < lv:
                    m.Add(ends[i] <= b)
                else:
                    m.Add(xs[i] >= b)
    if tail is not None:
        for i in range(n):
            if i != tail:
                m.Add(ends[i] <= xs[tail])
    sigma = m.NewIntVar(0, horizon // align, "sigma")
    size = m.NewIntVar(0, horizon, "size")
    m.Add(size == align * sigma)
    for i in range(n):
        m.Add(size >= ends[i])
    first, last = {}, {}
    hard = [i for i, (_, _, c) in enumerate(fields) if c != 0]
    for i in hard:
        s = max(1, fields[i][0]) if i == tail else fields[i][0]
        for p in phases:
            f = m.NewIntVar(0, (horizon + p) // line + 1, f"f{i}_{p}")
            l = m.NewIntVar(0, (horizon + p) // line + 1, f"l{i}_{p}")
            m.AddDivisionEquality(f, xs[i] + p, line)
            m.AddDivisionEquality(l, xs[i] + (s - 1 + p), line)
            first[i, p] = f
            last[i, p] = l
    for ii, i in enumerate(hard):
        for j in hard[ii + 1:]:
            if fields[i][2] == fields[j][2]:
                continue
            before = m.NewBoolVar(f"b{i}_{j}")
            for p in phases:
                m.Add(last[i, p] < first[j, p]).OnlyEnforceIf(before)
                m.Add(last[j, p] < first[i, p]).OnlyEnforceIf(before.Not())
    m.Minimize(size)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = WORKERS
    st = solver.Solve(m)
    if st == cp_model.OPTIMAL:
        v = int(solver.Value(size))
        return "optimal", v, v
    if st == cp_model.FEASIBLE:
        return "feasible", int(solver.Value(size)), int(solver.BestObjectiveBound())
    if st == cp_model.INFEASIBLE:
        return "infeasible", None, horizon + 1
    return "unknown", None, 0


def reference(inst, time_limit):
    fields = [tuple(f) for f in inst["fields"]]
    line = inst["line"]
    nat = natural_align(fields)
    horizon = inst["ours"]["size"]
    if inst["placement"] == "aligned":
        aligns, a = [nat], nat
        colours = {c for _, _, c in fields if c}
        while a < line and len(colours) >= 2:
            a *= 2
            aligns.append(a)
        geoms = [(a, list(range(0, line, a)) if a < line else [0]) for a in aligns]
    else:
        geoms = [(nat, [inst["placement"] % line])]
    best, proven, bound = None, True, None
    started = time.time()
    pins = [tuple(p) for p in inst.get("pins", [])]
    segments = inst.get("segments")
    if segments is not None and len(set(segments)) < 2:
        segments = None
    tail = inst.get("tail")
    for a, phases in geoms:
        st, v, b = solve_geometry(fields, line, phases, a, horizon, time_limit,
                                  pins, segments, tail)
        if v is not None and (best is None or v < best):
            best = v
        if st not in ("optimal", "infeasible"):
            proven = False
        bound = b if bound is None else min(bound, b)
    return {
        "limit": time_limit,
        "size": best,
        "proven": proven and best is not None,
        "bound": bound,
        "ms": (time.time() - started) * 1e3,
    }


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))
    return xs[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("--cache")
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--retry-unproven-up-to", type=int, default=0, metavar="N",
                    help="solve again, with this run's time limit, the cached references "
                         "not proven optimal of instances with at most N fields")
    args = ap.parse_args()
    global WORKERS
    WORKERS = args.workers
    cache = {}
    if args.cache:
        try:
            with open(args.cache) as f:
                cache = json.load(f)
        except FileNotFoundError:
            pass
    rows = [json.loads(l) for l in open(args.ours) if l.strip()]
    bands = {}
    misses = []
    for r in rows:
        key = json.dumps([r["line"], r["placement"], r["fields"], r.get("pins", []),
                          r.get("segments"), r.get("tail")])
        ref = cache.get(key)
        retry = ref is not None and not ref["proven"] and r["n"] <= args.retry_unproven_up_to \
            and ref.get("limit", 0) < args.time_limit
        if ref is None or retry or (not ref["proven"] and ref["size"] is not None and r["ours"]["size"] < ref["size"]):
            ref = reference(r, args.time_limit)
            cache[key] = ref
            if args.cache:
                with open(args.cache, "w") as f:
                    json.dump(cache, f)
        b = bands.setdefault((r.get("shape", "uniform"), r["band"]), {
            "n": 0, "ref_proven": 0, "reached": 0, "proven": 0, "false_claim": 0,
            "known": 0, "ours_only": 0, "beaten": 0, "ours_ms": [], "ref_ms": []})
        b["n"] += 1
        o = r["ours"]
        b["ours_ms"].append(o["ms"])
        b["ref_ms"].append(ref["ms"])
        if ref["proven"]:
            b["ref_proven"] += 1
            if o["size"] == ref["size"]:
                b["reached"] += 1
                if o.get("size_proven", o["optimal"]):
                    b["proven"] += 1
                else:
                    print("not proven: id %s, %d fields: ours %d, bound %d"
                          % (r["id"], r["n"], o["size"], o["lower_bound"]), file=sys.stderr)
            else:
                misses.append((r["id"], r["n"], o["size"], ref["size"]))
                if o.get("size_proven", o["optimal"]):
                    b["false_claim"] += 1
        if o["size"] < (ref["bound"] or 0):
            b["false_claim"] += 1
        # The optimum is known when either side proves it: CP-SAT, or
        # cachelayout's own proof where CP-SAT found nothing smaller (a
        # smaller CP-SAT layout would be counted as a false claim above).
        ours_proven = o.get("size_proven", o["optimal"])
        refuted = ref["size"] is not None and ref["size"] < o["size"]
        if refuted and not ref["proven"]:
            b["beaten"] += 1
            print("beaten: id %s, %d fields: ours %d, CP-SAT found %d (not proven)"
                  % (r["id"], r["n"], o["size"], ref["size"]), file=sys.stderr)
        if ref["proven"] or (ours_proven and not refuted):
            b["known"] += 1
            if not ref["proven"]:
                b["ours_only"] += 1
    if args.cache:
        with open(args.cache, "w") as f:
            json.dump(cache, f)
    print(f"{'shape':>12} {'fields':>8} {'inst':>5} {'ref opt':>7} {'reached':>8} {'proven':>8} {'false':>5} "
          f"{'known':>5} {'ours':>4} {'beaten':>6} "
          f"{'ours med':>9} {'ours p95':>9} {'ref med':>9} {'ref p95':>9}")
    shapes = []
    for shape, _ in bands:
        if shape not in shapes:
            shapes.append(shape)
    for shape, band in sorted(bands, key=lambda k: (shapes.index(k[0]), int(k[1].split('-')[0]))):
        b = bands[shape, band]
        rp = max(1, b["ref_proven"])
        print(f"{shape:>12} {band:>8} {b['n']:>5} {b['ref_proven']:>7} "
              f"{b['reached']:>4} {100*b['reached']/rp:>3.0f}% {b['proven']:>4} {100*b['proven']/rp:>3.0f}% "
              f"{b['false_claim']:>5} {b['known']:>5} {b['ours_only']:>4} {b['beaten']:>6} "
              f"{statistics.median(b['ours_ms']):>7.1f}ms {pct(b['ours_ms'], .95):>7.1f}ms "
              f"{statistics.median(b['ref_ms']):>7.1f}ms {pct(b['ref_ms'], .95):>7.1f}ms")
    for m in misses:
        print("not reached: id %s, %d fields: ours %d, optimum %d" % m, file=sys.stderr)


if __name__ == "__main__":
    main()
