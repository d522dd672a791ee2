#!/usr/bin/env python3
"""Check a cross-node job's tcomms log (TC_LOG=runtime=info,algo=info) against
the layout the job was started with.

    check_log.py LAYOUT LOG [--hier auto|forced|off]...

LAYOUT gives the ranks of each node in order (2,2,2: ranks 0-1 on tcn0, ...).
Checks, each printed with its numbers:
  - every line comes from the node the layout puts its rank on;
  - every "connected to rank P (same|another node) over B" line: "same" exactly
    when the layout puts P on the logging rank's node, and B is shm on the same
    node, tcp across nodes; both kinds present when the layout has both;
  - every rank logs the node geometry once, all with the same verdict;
  - --hier auto: some collective chose a hierarchical algorithm by the cost
    model on every rank; forced: ran one by hint; off: the geometry verdict is
    "hierarchical algorithms off" and no hierarchical algorithm ran.
Exit 0 when every check holds, else 1 (the failing lines quoted).
"""
import collections
import re
import sys

# host:pid; a line two ranks' output was merged into by the launcher's output
# forwarding (host:pid:pid ...) does not match and is skipped
LINE = re.compile(r"^(?:\[\d+\] )?\[[^]]+\] ([^\s:]+):\d+ rank (-|\d+) (\w+) (\w+): (.*)$")
CONN = re.compile(r"connected to rank (\d+) \((same|another) node\) over (\w+)")
GEOM = re.compile(r"comm 'world': \d+ ranks, \d+ on this node \(local rank -?\d+\): (.*)$")
ALGO = re.compile(r"^(\w+) on (\d+) ranks.*: (\w+) \((model|hint)")


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    layout = [int(x) for x in args[0].split(",")]
    want = []
    rest = args[2:]
    while rest:
        if rest[0] != "--hier" or len(rest) < 2 or rest[1] not in ("auto", "forced", "off"):
            sys.exit("check_log.py: unknown arguments %s" % rest)
        want.append(rest[1])
        rest = rest[2:]
    node = []
    for k, n in enumerate(layout):
        node += ["tcn%d" % k] * n
    world = len(node)
    bad = []
    conns = collections.Counter()
    geom = {}
    hier = collections.defaultdict(set)  # how -> ranks
    flat_ranks = set()
    with open(args[1], errors="replace") as f:
        for text in f:
            m = LINE.match(text.rstrip("\n"))
            if not m:
                continue
            host, rank, _subsys, level, msg = m.groups()
            if rank == "-":
                continue
            r = int(rank)
            if r >= world or host != node[r]:
                bad.append("rank %d logs from %s, the layout puts it on %s: %s"
                           % (r, host, node[r] if r < world else "no node", text.strip()))
                continue
            c = CONN.search(msg)
            if c:
                p, where, backend = int(c.group(1)), c.group(2), c.group(3)
                same = p < world and node[p] == node[r]
                if (where == "same") != same or backend != ("shm" if same else "tcp"):
                    bad.append("rank %d (%s) to rank %d (%s): %s over %s"
                               % (r, node[r], p, node[p] if p < world else "?", where, backend))
                conns[(where, backend)] += 1
            g = GEOM.search(msg)
            if g:
                if r in geom:
                    bad.append("rank %d logs the node geometry twice" % r)
                geom[r] = g.group(1)
            a = ALGO.match(msg)
            if a and level == "INFO":
                if a.group(3) == "hierarchical":
                    hier[a.group(4)].add(r)
                else:
                    flat_ranks.add(r)
    same_pairs = any(n > 1 for n in layout)
    cross_pairs = sum(1 for n in layout if n > 0) > 1
    print("connections: %d same node over shm, %d across nodes over tcp, %d other"
          % (conns[("same", "shm")], conns[("another", "tcp")],
             sum(conns.values()) - conns[("same", "shm")] - conns[("another", "tcp")]))
    if same_pairs and not conns[("same", "shm")]:
        bad.append("no same-node connection over shm logged (the layout has same-node ranks)")
    if cross_pairs and not conns[("another", "tcp")]:
        bad.append("no cross-node connection over tcp logged")
    verdicts = collections.Counter(geom.values())
    print("node geometry: %s on %d of %d ranks" % (dict(verdicts), len(geom), world))
    if len(geom) != world or len(verdicts) != 1:
        bad.append("the ranks do not all log one node geometry: %s" % dict(verdicts))
    print("hierarchical: chosen by the model on %d ranks, forced on %d"
          % (len(hier["model"]), len(hier["hint"])))
    for w in want:
        if w == "auto" and len(hier["model"]) != world:
            bad.append("hierarchical not chosen by the model on every rank (%d of %d)"
                       % (len(hier["model"]), world))
        if w == "forced" and len(hier["hint"]) != world:
            bad.append("hierarchical not run by hint on every rank (%d of %d)"
                       % (len(hier["hint"]), world))
        if w == "off":
            if any("off" not in v for v in verdicts):
                bad.append("hierarchical algorithms not off: %s" % dict(verdicts))
            if hier["model"]:
                bad.append("hierarchical chosen by the model although off, ranks %s"
                           % sorted(hier["model"]))
    for b in bad[:20]:
        print("  BAD: " + b)
    if len(bad) > 20:
        print("  ... and %d more" % (len(bad) - 20))
    sys.exit(1 if bad else 0)


main()
