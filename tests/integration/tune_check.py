#!/usr/bin/env python3
"""Checks of run_tune.sh (tc-tune's outputs), independent of the library's parser.

  tune_check.py file FILE                 a tuning file written on one node
  tune_check.py info FILE JSON [KEY=V]..  tc-info --json shows FILE's values (KEY=V: from env)
  tune_check.py table TABLE text|csv [file]  a tc-tune --validate table
  tune_check.py floors FILE LOG           the file's alpha and o are at least what every rank
                                          at once measured (LOG: tc-tune -o's output)
  tune_check.py rules FILE LOG            the rules of tc-tune -o --rules: every measured cell
                                          covered by the fastest algorithm (or one within 3%)
  tune_check.py picks TABLE FILE          a --validate table's "model" column is FILE's rule
Exit status 0 when every check holds, 1 with the reasons on stderr.
"""
import math
import sys

PARAMS = ["alpha_intra_us", "alpha_inter_us", "beta_intra_us", "beta_inter_us", "gamma_us",
          "overhead_us"]
COLLS = ["all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all",
         "gather", "scatter", "barrier"]
errors = []


def check(cond, what):
    if not cond:
        errors.append(what)


def read_file(path, version="2"):
    kv, first = {}, None
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if first is None:
            first = (key, value)
        check(key not in kv, "key %s twice" % key)
        kv[key] = value
    check(first == ("tcomms_tuning", version),
          "first line %r, not tcomms_tuning = %s" % (first, version))
    return kv


def read_rules(path):
    """{coll: [(from_bytes, algo), ...]} of a version 3 file, checked for form."""
    rules = {}
    for key, value in read_file(path, "3").items():
        if not key.startswith("rule_"):
            continue
        coll = key[len("rule_"):]
        check(coll in COLLS, "rule for %r" % coll)
        items = []
        for item in value.split():
            b, _, algo = item.partition(":")
            check(b.isdigit() and algo != "", "rule item %r" % item)
            if b.isdigit():
                items.append((int(b), algo))
        froms = [b for b, _ in items]
        check(froms == sorted(set(froms)), "%s: sizes do not ascend: %s" % (key, froms))
        check(froms[:1] == [0], "%s: the first rule starts at %s, not 0" % (key, froms[:1]))
        rules[coll] = items
    return rules


def rule_for(rules, coll, size):
    hit = None
    for b, algo in rules.get(coll, []):
        if b <= size:
            hit = algo
    return hit


def check_rules(path, log):
    """Each cell tc-tune printed ("# COLL BYTES fastest NAME T us NAME=T ...") is covered by a
    rule whose algorithm took at most 3% more than the cell's fastest (the printed times are
    rounded to 0.01 us)."""
    import re
    rules = read_rules(path)
    cells = 0
    for line in open(log):
        line = re.sub(r"^\[\d+\] ", "", line)
        m = re.match(r"# (\w+)\s+(\d+)\s+fastest (\w+)\s+([0-9.]+) us (.*)$", line)
        if not m:
            continue
        cells += 1
        coll, size, fastest = m.group(1), int(m.group(2)), m.group(3)
        times = dict((a, float(t)) for a, t in (x.split("=") for x in m.group(5).split()))
        check(times.get(fastest) == min(times.values()),
              "%s %d: %s is not the fastest of %s" % (coll, size, fastest, times))
        algo = rule_for(rules, coll, size)
        check(algo in times, "%s %d: rule %r, not an algorithm measured (%s)"
              % (coll, size, algo, sorted(times)))
        if algo in times:
            check(times[algo] <= 1.03 * times[fastest] + 0.011,
                  "%s %d: rule %s at %.2f us, the fastest %s at %.2f"
                  % (coll, size, algo, times[algo], fastest, times[fastest]))
    check(cells > 0, "no measured cells in the log")
    check(sorted(rules) == sorted(COLLS), "rules for %s" % sorted(rules))


def check_picks(table, path):
    """The selection follows the file's rules: every row's model column is its rule."""
    rules = read_rules(path)
    rows = 0
    for l in open(table):
        if not l.strip() or l.startswith("#") or l.startswith("coll,"):
            continue
        f = l.split()
        coll, size, model = f[0], int(f[1]), f[8]
        rows += 1
        check(model == rule_for(rules, coll, size),
              "%s %d: selection %s, rule %s" % (coll, size, model, rule_for(rules, coll, size)))
    check(rows > 0, "no rows")


def check_file(path):
    kv = read_file(path)
    for k in ["alpha_intra_us", "beta_intra_us", "gamma_us", "overhead_us"]:
        check(k in kv, "%s missing" % k)
        if k in kv:
            v = float(kv[k])
            check(math.isfinite(v) and 0 <= v <= 1e9, "%s = %s out of range" % (k, kv[k]))
    # one node: no pair on different nodes, the inter class is not written
    check("alpha_inter_us" not in kv and "beta_inter_us" not in kv, "an inter class on one node")
    check(kv.get("ranks") == "2" and kv.get("nodes") == "1" and kv.get("ranks_per_node") == "2",
          "job shape %s/%s/%s, not 2 ranks on 1 node" % (kv.get("ranks"), kv.get("nodes"),
                                                         kv.get("ranks_per_node")))
    for k in ["host", "date", "tool"]:
        check(kv.get(k, "") != "", "%s missing" % k)


def check_info(path, json_path, overrides):
    import json
    kv = read_file(path)
    env = dict(o.split("=", 1) for o in overrides)
    model = json.load(open(json_path))["cost_model"]
    check("error" not in model, "tc-info: %s" % model.get("error"))
    check(model.get("tuning_file") == path, "tuning_file %r" % model.get("tuning_file"))
    got = {p["key"]: p for p in model.get("params", [])}
    check(sorted(got) == sorted(PARAMS), "params %s" % sorted(got))
    for k in PARAMS:
        if k not in got:
            continue
        if k in env:
            want, src = float(env[k]), "env"
        elif k in kv:
            want, src = float(kv[k]), "file"
        else:
            want, src = None, "default"
        check(got[k]["source"] == src, "%s from %s, not %s" % (k, got[k]["source"], src))
        if want is not None:
            check(got[k]["value"] == want, "%s = %r, not %r" % (k, got[k]["value"], want))


def check_table(path, fmt, with_file):
    lines = [l.rstrip("\n") for l in open(path)]
    model = [l for l in lines if l.startswith("# model:")]
    check(len(model) == 1, "%d model lines" % len(model))
    if with_file and model:
        check("(file)" in model[0] and "file=" in model[0], "the model line names no file")
    summary = [l for l in lines if l.startswith("# summary:")]
    check(len(summary) == 1, "%d summary lines" % len(summary))
    rows, colls = [], set()
    for l in lines:
        if not l or l.startswith("#") or l.startswith("coll,"):
            continue
        f = l.split(",") if fmt == "csv" else l.split()
        if len(f) < 10:
            errors.append("short row: %r" % l)
            continue
        coll, size, chosen, cus, fastest, fus, ratio, ok = f[:8]
        algos = f[9] if fmt == "csv" else " ".join(f[9:])
        try:
            size, cus, fus, ratio = int(size), float(cus), float(fus), float(ratio)
        except ValueError:
            errors.append("not numbers: %r" % l)
            continue
        check(coll in COLLS, "collective %r" % coll)
        colls.add(coll)
        check(cus > 0 and fus > 0, "times in %r" % l)
        # the times are printed to 0.01 us: a ratio of times near 1 us moves by more
        slack = ratio * (0.005 / cus + 0.005 / fus)
        check(abs(ratio - cus / fus) <= 0.002 * ratio + 0.001 + slack,
              "ratio %g != %g / %g" % (ratio, cus, fus))
        check(ratio >= 0.999, "the fastest is slower than the chosen in %r" % l)
        check(ok == ("yes" if ratio <= 1.10 + 5e-4 else "no") or abs(ratio - 1.10) < 1e-3,
              "ok column %r for ratio %g" % (ok, ratio))
        names = [a.split("=")[0] for a in algos.replace(";", " ").split()]
        check(chosen in names and fastest in names, "chosen/fastest not among %s" % names)
        check(coll != "barrier" or size == 0, "barrier of %d bytes" % size)
        check(coll == "barrier" or 8 <= size <= 4096, "size %d outside --quick's 8..4096" % size)
        rows.append(ok == "yes")
    check(colls == set(COLLS), "collectives missing: %s" % sorted(set(COLLS) - colls))
    if summary:
        w = summary[0].split()
        try:
            within, cells = int(w[2]), int(w[4])
            check(cells == len(rows) and within == sum(rows),
                  "summary %d of %d, rows %d of %d" % (within, cells, sum(rows), len(rows)))
        except (ValueError, IndexError):
            errors.append("summary %r" % summary[0])


def check_floors(path, log):
    """alpha_intra_us >= the "intra all 8 bytes" time, overhead_us >= (burst all 8 - burst all 1)
    / 7: the figures of every rank at once are floors of the model's parameters."""
    import re
    kv = read_file(path)
    loaded, burst = None, {}
    for line in open(log):
        line = re.sub(r"^\[\d+\] ", "", line)
        m = re.match(r"intra\s+all\s+8 bytes\s+([0-9.]+) us \(every rank at once\)", line)
        if m:
            loaded = float(m.group(1))
        m = re.match(r"burst\s+all\s+(\d+) msgs\s+([0-9.]+) us \(every rank at once\)", line)
        if m:
            burst[int(m.group(1))] = float(m.group(2))
    check(loaded is not None, "no line of the intra exchange with every rank at once")
    check(sorted(burst) == [1, 8], "burst lines with every rank at once: %s" % sorted(burst))
    # the log prints 3 decimals: allow their rounding
    if loaded is not None and "alpha_intra_us" in kv:
        check(float(kv["alpha_intra_us"]) >= loaded - 0.001,
              "alpha_intra_us %s below the exchange of every rank at once, %.3f us"
              % (kv["alpha_intra_us"], loaded))
    if sorted(burst) == [1, 8] and "overhead_us" in kv:
        floor = max(0.0, (burst[8] - burst[1]) / 7)
        check(float(kv["overhead_us"]) >= floor - 0.001,
              "overhead_us %s below the burst of every rank at once, %.3f us"
              % (kv["overhead_us"], floor))


def main():
    mode = sys.argv[1]
    if mode == "file":
        check_file(sys.argv[2])
    elif mode == "info":
        check_info(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif mode == "rules":
        check_rules(sys.argv[2], sys.argv[3])
    elif mode == "picks":
        check_picks(sys.argv[2], sys.argv[3])
    elif mode == "floors":
        check_floors(sys.argv[2], sys.argv[3])
    elif mode == "table":
        check_table(sys.argv[2], sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "file")
    else:
        errors.append("mode %s" % mode)
    for e in errors:
        print("tune_check: %s" % e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
