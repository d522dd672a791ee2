# bench/run_scale.sh's reporter: reads the probes' lines ("scale launcher=L ranks=N status=S
# rank=R key=value ...") and prints markdown tables, each cell the median over the job's ranks
# with [min-max] when they differ, then the checks (correctness only, never timing):
#   awk -v want="tcrun mpirun:2 8" [-v quick=1] -f bench/scale_report.awk LINES
# Checks: every job of `want` printed one line per rank, every all-reduce was right, and for
# tcrun, a communicator (K >= 100) costs at most comm_kib KiB of heap, and after destroying up to
# 100 communicators, descriptors are back exactly and heap (exact)
# within leak_heap bytes; with quick=1 also RSS within leak_rss KiB (only there: at 128 ranks and
# more, glibc kept up to 1.5 MiB of freed pages below a later allocation, the heap being back).
# 1000 communicators are reported, not checked. Exit status 1 when a check fails.
BEGIN {
    if (leak_heap == "") leak_heap = 8192
    if (leak_rss == "") leak_rss = 1024
    if (comm_kib == "") comm_kib = 16 # a communicator's heap, held (15.3 KiB at 2-256 ranks)
    split(want, w, ":"); nl = split(w[1], wl, " "); nr = split(w[2], wr, " ")
}
$1 == "scale" {
    delete f
    for (i = 2; i <= NF; i++) { eq = index($i, "="); f[substr($i, 1, eq - 1)] = substr($i, eq + 1) }
    job = f["launcher"] " " f["ranks"]
    r = lines[job]++
    for (k in f) v[job, k, r] = f[k]
    if (!(job in seen)) { seen[job] = 1; jobs[njobs++] = job }
}
# Median [min-max] of field k over job j's ranks, divided by div.
function cell(j, k, div, fmt,    n, i, a, t, x, y, lo, hi, med) {
    n = lines[j]
    if (n == 0 || !((j, k, 0) in v)) return "-"
    for (i = 0; i < n; i++) {
        x = v[j, k, i] / div
        for (y = i; y > 0 && a[y - 1] > x; y--) a[y] = a[y - 1]
        a[y] = x
    }
    lo = sprintf(fmt, a[0]); hi = sprintf(fmt, a[n - 1]); med = sprintf(fmt, a[int((n - 1) / 2)])
    return lo == hi ? med : med " [" lo "-" hi "]"
}
function maxof(j, k,    i, m) {
    m = v[j, k, 0] + 0
    for (i = 1; i < lines[j]; i++) if (v[j, k, i] + 0 > m) m = v[j, k, i] + 0
    return m
}
function median(j, k,    c) {
    c = cell(j, k, 1, "%.2f")
    return c + 0
}
function bad(msg) { print "# CHECK FAILED: " msg; failed = 1 }
END {
    print ""
    print "| launcher | ranks | lines | to end of create (ms from launch) | create call (ms) | RSS (MiB) |" \
          " RSS peak (MiB) | heap (KiB) | threads | fds | sockets | shm segs | shm (MiB) |" \
          " peers at create | peers after ops | barrier (us) | 8 B all-reduce (us) |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for (i = 0; i < njobs; i++) {
        j = jobs[i]; split(j, p, " ")
        print "| " p[1] " | " p[2] " | " lines[j] " | " cell(j, "launch_ms", 1, "%.0f") " | " \
            cell(j, "create_ms", 1, "%.0f") " | " cell(j, "rss_kib", 1024, "%.1f") " | " \
            cell(j, "hwm_kib", 1024, "%.1f") " | " cell(j, "heap_kib", 1, "%d") " | " \
            cell(j, "threads", 1, "%d") " | " cell(j, "fds", 1, "%d") " | " \
            cell(j, "socks", 1, "%d") " | " cell(j, "shm_segs", 1, "%d") " | " \
            cell(j, "shm_kib", 1024, "%.1f") " | " cell(j, "eps_create", 1, "%d") " | " \
            cell(j, "eps", 1, "%d") " | " cell(j, "barrier_us", 1, "%.1f") " | " \
            cell(j, "allreduce_us", 1, "%.1f") " |"
    }
    print ""
    print "Communicators: per communicator, heap KiB / RSS KiB while K exist (median over ranks);" \
          " fds: descriptors added by K; left: the most any rank kept after destroying them" \
          " (heap B / RSS KiB / fds)."
    print ""
    print "| launcher | ranks | kind | K | heap KiB/comm | RSS KiB/comm | fds added | left: heap B | left: RSS KiB | left: fds |"
    print "|---|---|---|---|---|---|---|---|---|---|"
    for (i = 0; i < njobs; i++) {
        j = jobs[i]; split(j, p, " ")
        for (s = 0; s < 2; s++) {
            kind = s ? "split" : "dup"
            for (K = 1; K <= 4096; K++) {
                if (!((j, kind K "_heap_kib", 0) in v)) continue
                print "| " p[1] " | " p[2] " | " kind " | " K " | " \
                    cell(j, kind K "_heap_kib", 1, "%.1f") " | " cell(j, kind K "_rss_kib", 1, "%.1f") \
                    " | " cell(j, kind K "_fds", 1, "%d") " | " maxof(j, kind K "_heap_left") " | " \
                    maxof(j, kind K "_rss_left") " | " maxof(j, kind K "_fds_left") " |"
                if (p[1] != "tcrun" || K > 100) continue
                if (K >= 100 && median(j, kind K "_heap_kib") > comm_kib)
                    bad(j " ranks: " kind " communicators cost " median(j, kind K "_heap_kib") \
                        " KiB of heap each (bound " comm_kib ")")
                if (maxof(j, kind K "_fds_left") != 0)
                    bad(j " ranks: " K " " kind "s left " maxof(j, kind K "_fds_left") " descriptors")
                if (maxof(j, kind K "_heap_left") > leak_heap)
                    bad(j " ranks: " K " " kind "s left " maxof(j, kind K "_heap_left") \
                        " B of heap (bound " leak_heap ")")
                if (quick == 1 && maxof(j, kind K "_rss_left") > leak_rss)
                    bad(j " ranks: " K " " kind "s left " maxof(j, kind K "_rss_left") \
                        " KiB of RSS (bound " leak_rss ")")
            }
        }
    }
    print ""
    for (a = 1; a <= nl; a++)
        for (b = 1; b <= nr; b++) {
            j = wl[a] " " wr[b]
            if (lines[j] != wr[b]) { bad(j " ranks: " lines[j] + 0 " lines of " wr[b]); continue }
            if (v[j, "status", 0] != 0)
                bad(j " ranks: the job's exit status was " v[j, "status", 0])
            for (i = 0; i < lines[j]; i++)
                if (v[j, "ar_ok", i] != 1)
                    bad(j " ranks: rank " v[j, "rank", i] ": a wrong all-reduce result")
        }
    if (!failed) print "# checks: ok (lines, all-reduce results, communicators released)"
    exit failed
}
