#!/usr/bin/env python3
"""Compare two `reach_bench --dump` files (the same sets, two builds)
against the better of their references: per set and band, optima reached,
false claims (a size claimed minimal, or a bound, above the reference) and
the gaps.

    python3 tools/reach_compare.py before.tsv after.tsv
"""
import collections
import sys


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            id_, set_, band, size, claimed, bound, ref, how = line.rstrip("\n").split("\t")[:8]
            rows[id_] = dict(set=set_, band=band, size=int(size), claimed=claimed == "1",
                             bound=int(bound), ref=int(ref), how=how)
    return rows


def main():
    runs = [load(p) for p in sys.argv[1:]]
    names = sys.argv[1:]
    ids = [i for i in runs[0] if all(i in r for r in runs)]
    best = {i: min(min(r[i]["ref"], r[i]["size"]) for r in runs) for i in ids}
    table = collections.OrderedDict()
    for i in ids:
        key = (runs[0][i]["set"], runs[0][i]["band"])
        table.setdefault(key, [collections.Counter() for _ in runs])
        for k, r in enumerate(runs):
            x = r[i]
            c = table[key][k]
            c["n"] += 1
            gap = x["size"] - best[i]
            c["reached"] += gap == 0
            if gap:
                c[f"gap {gap}"] += 1
            c["false"] += (x["claimed"] and x["size"] > best[i]) or x["bound"] > best[i]
    print("| set | members | instances | " + " | ".join(
        f"reached ({n}) | false ({n}) | gaps ({n})" for n in names) + " |")
    print("|---|---|---|" + "---|---|---|" * len(runs))
    totals = [collections.Counter() for _ in runs]
    for (s, b), cs in sorted(table.items()):
        cells = []
        for k, c in enumerate(cs):
            gaps = ", ".join(f"{g[4:]} B: {v}" for g, v in sorted(c.items()) if g.startswith("gap"))
            cells += [str(c["reached"]), str(c["false"]), gaps or "—"]
            totals[k][s + " n"] += c["n"]
            totals[k][s + " reached"] += c["reached"]
            totals[k][s + " false"] += c["false"]
        print(f"| {s} | {b} | {cs[0]['n']} | " + " | ".join(cells) + " |")
    for k, n in enumerate(names):
        sets = sorted({key[:-2] for key in totals[k] if key.endswith(" n")})
        print(n + ": " + "; ".join(
            f"{s} {totals[k][s + ' reached']} of {totals[k][s + ' n']} reached, "
            f"{totals[k][s + ' false']} false" for s in sets))


if __name__ == "__main__":
    main()
