# The table of one operation for bench/run_rma.sh. Input: lines "tool op bytes lat_us
# bw_us_per_op wrong" (tools tc, tctcp, ompi, ompitcp); -v op, min, max, f (the size sweep).
# Prints per size the latency (us) and bandwidth (GB/s) of tcomms and Open MPI over shared
# memory and over TCP, with the ratios tcomms / Open MPI, and WRONG(tool) after a row whose
# data a tool found wrong.
$2 == op {
    lat[$1, $3] = $4
    bw[$1, $3] = $5 > 0 ? $3 / $5 / 1e3 : 0
    bad[$1, $3] += $6
}

# (an element is looked at only once it is known to exist: a lookup would create it)
function cell(t, s, kind) {
    if (!((t, s) in lat))
        return sprintf("%9s", "n/a")
    return sprintf("%9.3f", kind == "lat" ? lat[t, s] : bw[t, s])
}

# tcomms / Open MPI: latency (time, < 1 favours tcomms) or bandwidth (> 1 favours tcomms)
function ratio(a, b, s, kind,    x, y) {
    if (!((a, s) in lat) || !((b, s) in lat))
        return sprintf("%6s", "-")
    x = kind == "lat" ? lat[a, s] : bw[a, s]
    y = kind == "lat" ? lat[b, s] : bw[b, s]
    return y > 0 ? sprintf("%6.2f", x / y) : sprintf("%6s", "-")
}

function group(a, b, s, kind) {
    return sprintf("%s %s %s", cell(a, s, kind), cell(b, s, kind), ratio(a, b, s, kind))
}

END {
    printf "# %s: latency (us, op + flush) and bandwidth (GB/s, burst + flush);", op
    printf " ratio = tcomms / Open MPI\n"
    fmt = "# %10s | %9s %9s %6s | %9s %9s %6s | %9s %9s %6s | %9s %9s %6s\n"
    printf fmt, "", "lat", "", "", "lat", "", "", "bw", "", "", "bw", "", ""
    printf fmt, "size (B)", "tc-shm", "ompi", "ratio", "tc-tcp", "ompi-tcp", "ratio",
        "tc-shm", "ompi", "ratio", "tc-tcp", "ompi-tcp", "ratio"
    n = split("tc tctcp ompi ompitcp", tools, " ")
    for (s = min; s <= max; s *= f) {
        w = ""
        for (i = 1; i <= n; i++)
            if (bad[tools[i], s] > 0)
                w = w " WRONG(" tools[i] ")"
        printf "  %10d | %s | %s | %s | %s%s\n", s, group("tc", "ompi", s, "lat"),
            group("tctcp", "ompitcp", s, "lat"), group("tc", "ompi", s, "bw"),
            group("tctcp", "ompitcp", s, "bw"), w
    }
}
