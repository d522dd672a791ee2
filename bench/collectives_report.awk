# Tables and summary of bench/run_collectives.sh (POSIX awk; mawk is Debian's default).
#   awk -v mode=table|summary [-v coll=C -v n=N] -v tools=... -v colls=... -v ranks=... \
#       -f bench/collectives_report.awk RESULTS NOTES WHY
# RESULTS: "tool nranks coll bytes time_us"; NOTES: "tool nranks coll why" (why a cell is n/a);
# WHY: "tool why" (why a tool is n/a everywhere). Bus bandwidth is recomputed here from bytes and
# time with nccl-tests' factors, so every column uses the same definition. A ratio is tcomms
# busbw / peer busbw = peer time / tcomms time (also for barrier, which moves no bytes): > 1
# favours tcomms.
function bus_factor(c, n) {
    if (c == "all_reduce") return 2.0 * (n - 1) / n
    if (c == "reduce" || c == "broadcast") return 1.0
    if (c == "barrier") return 0.0
    return (n - 1) / n
}
function has(tool, c, n, b) { return ((tool, n, c, b) in T) && T[tool, n, c, b] > 0 }
function busbw(tool, c, n, b) { return b * bus_factor(c, n) / T[tool, n, c, b] / 1e3 }
function ratio(a, p, c, n, b) { return T[p, n, c, b] / T[a, n, c, b] }
function hsize(b) {
    if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
    if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
    return b
}
# The sizes measured for (c, n) by any tool, ascending, into S[1..k]; returns k.
function sizes(c, n, S,    k, i, j, v, m, L) {
    m = split(SZ[c, n], L, " ")
    k = 0
    for (i = 1; i <= m; i++) {
        v = L[i] + 0
        for (j = k; j >= 1 && S[j] > v; j--)
            S[j + 1] = S[j]
        S[j + 1] = v
        k++
    }
    return k
}
# all_reduce time of tool, and the latency ratio tcomms/peer (< 1 favours tcomms), or n/a.
function us(tool, n, b) {
    return has(tool, "all_reduce", n, b) ? sprintf("%.1f", T[tool, n, "all_reduce", b]) : "n/a"
}
function lat(a, p, n, b) {
    if (!has(a, "all_reduce", n, b) || !has(p, "all_reduce", n, b)) return "n/a"
    return sprintf("%.2f", T[a, n, "all_reduce", b] / T[p, n, "all_reduce", b])
}
# True when tool has no result at all for (c, n) (S[1..k]: the sizes).
function none(tool, c, n, S, k,    i) {
    for (i = 1; i <= k && !has(tool, c, n, S[i]); i++) ;
    return i > k
}
function reason(tool, c, n) {
    if (tool in WHY) return WHY[tool]
    if ((tool, n, c) in NOTE) return NOTE[tool, n, c]
    return ""
}
function geomean_line(a, p, c, n, lo, hi, S, k,    i, s, cnt, out) {
    s = 0; cnt = 0; out = ""
    for (i = 1; i <= k; i++) {
        if (S[i] < lo || S[i] > hi || !has(a, c, n, S[i]) || !has(p, c, n, S[i])) continue
        out = out sprintf(" %s %.2f", hsize(S[i]), ratio(a, p, c, n, S[i]))
        s += log(ratio(a, p, c, n, S[i])); cnt++
    }
    if (cnt == 0) {
        if (none(a, c, n, S, k)) return "n/a (" LABEL[a] ": " reason(a, c, n) ")"
        if (none(p, c, n, S, k)) return "n/a (" LABEL[p] ": " reason(p, c, n) ")"
        return "n/a (no size in range measured by both)"
    }
    return sprintf("%.2f (geomean of%s)", exp(s / cnt), out)
}
BEGIN {
    nt = split(tools, TOOL, " ")
    LABEL["tc"] = "tc-shm"; LABEL["tctcp"] = "tc-tcp"; LABEL["ompi"] = "ompi"
    LABEL["ompitcp"] = "ompi-tcp"; LABEL["gloo"] = "gloo"; LABEL["torch"] = "torch"
    # ratio columns: tcomms side, peer side, header
    nr = split("tc:ompi:shm/ompi tctcp:ompitcp:tcp/ompi tctcp:gloo:tcp/gloo tctcp:torch:tcp/torch",
               RC, " ")
}
FILENAME == ARGV[1] {
    T[$1, $2, $3, $4] = $5
    if (!(($2, $3, $4) in SEEN)) { SEEN[$2, $3, $4] = 1; SZ[$3, $2] = SZ[$3, $2] " " $4 }
    next
}
FILENAME == ARGV[2] { r = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", r); NOTE[$1, $2, $3] = r; next }
FILENAME == ARGV[3] { r = $0; sub(/^[^ ]+ /, "", r); WHY[$1] = r; next }
END {
    if (mode == "table") table(coll, n + 0)
    else summary()
}
function table(c, n,    S, k, i, j, b, P, r) {
    printf "# %s, %d ranks, float32%s: time (us), busbw (GB/s); ratio = tcomms busbw / peer" \
           " busbw (> 1 favours tcomms)\n", c, n, c ~ /reduce/ ? " sum" : ""
    printf "# %9s |", ""
    for (i = 1; i <= nt; i++) printf " %-16s|", LABEL[TOOL[i]]
    printf "\n# %9s |", "size(B)"
    for (i = 1; i <= nt; i++) printf " %9s %6s |", "us", "GB/s"
    for (j = 1; j <= nr; j++) { split(RC[j], P, ":"); printf " %9s", P[3] }
    printf "\n"
    k = sizes(c, n, S)
    for (i = 1; i <= k; i++) {
        b = S[i]
        printf "  %9d |", b
        for (j = 1; j <= nt; j++) {
            if (!has(TOOL[j], c, n, b)) printf " %9s %6s |", "n/a", "-"
            else if (c == "barrier") printf " %9.1f %6s |", T[TOOL[j], n, c, b], "-"
            else printf " %9.1f %6.3f |", T[TOOL[j], n, c, b], busbw(TOOL[j], c, n, b)
        }
        for (j = 1; j <= nr; j++) {
            split(RC[j], P, ":")
            if (has(P[1], c, n, b) && has(P[2], c, n, b))
                printf " %9.2f", ratio(P[1], P[2], c, n, b)
            else printf " %9s", "n/a"
        }
        printf "\n"
    }
    if (k == 0) printf "  (no results)\n"
    for (j = 1; j <= nt; j++) {
        r = reason(TOOL[j], c, n)
        if (r == "" && k > 0 && none(TOOL[j], c, n, S, k)) r = "no result"
        if (r != "") printf "#   %s n/a: %s\n", LABEL[TOOL[j]], r
    }
}
function summary(    R, nrk, i, S, k, b, lo, C, nc, j) {
    nrk = split(ranks, R, " ")
    print "# summary (ratios: > 1 favours tcomms, except latency: tcomms/peer time, < 1 favours" \
          " tcomms)"
    if (colls !~ /(^| )all_reduce( |$)/) print "#   all_reduce not run: no all-reduce summary"
    else for (i = 1; i <= nrk; i++) {
        k = sizes("all_reduce", R[i], S)
        printf "  all_reduce %d ranks, busbw 16-64 MiB: tc-shm/ompi %s\n", R[i],
               geomean_line("tc", "ompi", "all_reduce", R[i], 16777216, 67108864, S, k)
        printf "  all_reduce %d ranks, busbw 16-64 MiB: tc-tcp/ompi-tcp %s\n", R[i],
               geomean_line("tctcp", "ompitcp", "all_reduce", R[i], 16777216, 67108864, S, k)
        if (k == 0) continue
        b = S[1]
        printf "  all_reduce %d ranks, latency %d B: tc-shm %s us, ompi %s us, ratio %s;" \
               " tc-tcp %s us, ompi-tcp %s us, ratio %s\n", R[i], b,
               us("tc", R[i], b), us("ompi", R[i], b), lat("tc", "ompi", R[i], b),
               us("tctcp", R[i], b), us("ompitcp", R[i], b), lat("tctcp", "ompitcp", R[i], b)
    }
    # TCP against Gloo (and PyTorch-gloo): sizes >= 16 MiB, or the largest 3 when the sweep
    # stops below 16 MiB.
    nc = split(colls, C, " ")
    for (j = 1; j <= nc; j++) {
        if (C[j] == "barrier") continue
        for (i = 1; i <= nrk; i++) {
            k = sizes(C[j], R[i], S)
            if (none("tctcp", C[j], R[i], S, k)) {
                printf "  %-14s %d ranks: tc-tcp n/a (%s)\n", C[j], R[i],
                       reason("tctcp", C[j], R[i]) != "" ? reason("tctcp", C[j], R[i]) : "no result"
                continue
            }
            lo = S[k] >= 16777216 ? 16777216 : S[k >= 3 ? k - 2 : 1]
            printf "  %-14s %d ranks, busbw >= %s: tc-tcp/gloo %s; tc-tcp/torch %s\n", C[j], R[i],
                   hsize(lo), geomean_line("tctcp", "gloo", C[j], R[i], lo, 1e18, S, k),
                   geomean_line("tctcp", "torch", C[j], R[i], lo, 1e18, S, k)
        }
    }
}
