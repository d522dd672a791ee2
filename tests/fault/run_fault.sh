#!/usr/bin/env bash
# Fault injection under tcrun: ranks killed (SIGKILL) before, during and after
# all-reduces of every algorithm family, a second failure during shrink, a
# rank stopped (SIGSTOP, with and without heartbeats), a revoke, a slow rank, cut TCP connections, a rank calling a
# different collective, abort with operations pending on a dead rank, and
# a receive from any source waiting while a rank dies, and one posted after a rank sent and left;
# tc_comm_create_abort() of a creation waiting for a rank that never joins;
# a rank that exits before or dies inside tc_comm_create, named by the others; a stopped rank
# the others shrank away that comes back (its shrink fails as cut off); revokes of a shrink's
# communicator the moment it exists; a send taken back by a local abort after it was announced;
# deaths placed inside shrink's agreement (TC_FAULT_INJECT), on both its graphs;
# a rank dying in a batch, named by every survivor (not a sender that withdrew its message);
# an abort ending a shrink on another thread;
# a kill under srun -K0; a revoke and a kill under the torchrun environment; then no pair
# segment of the trials left in /dev/shm once a next job started. Every run is bounded by tcrun's
# --timeout and `timeout`.
#   run_fault.sh BIN [--trials N] [--only REGEX]
#     BIN: a bazel-bin with tools/tcrun and tests/fault; --only: the cases whose
#     names match REGEX (grep -E), e.g. --only 'kill-during-(ring|rec|rab|dou)' for the
#     8-rank all-reduce loops
# Prints one line per case and the distribution of detection times; exits
# non-zero if any trial failed.
set -uo pipefail
bin=${1:?bazel-bin directory}
shift
trials=10 only=
while [ $# -gt 0 ]; do
    case $1 in
    --trials) trials=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "run_fault.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
tcrun=$bin/tools/tcrun/tcrun
ft=$bin/tests/fault/ft_test
tcfr=$here/../../tools/tc-fr/tc-fr
log=$(mktemp -d /tmp/tc-fault.XXXXXX)
pass=0 fail=0
detect=$log/detect_ms
# pair segments in /dev/shm before the trials: not theirs (see the end)
shm_before=$(ls /dev/shm 2>/dev/null | grep '^tcomms-' | sort)

# one NAME RANKS WANT_CLEAN MODE VICTIM SEED [ENV...]: a trial passes when WANT_CLEAN
# ranks print "0 failures" and no rank prints FAIL.
one() {
    local name=$1 n=$2 want=$3 mode=$4 victim=$5 seed=$6
    shift 6
    local dir=$log/$name.$seed
    mkdir -p "$dir"
    : >"$dir/out" # exists before the stop cases look at it
    env TC_FT_DIR="$dir" TC_FR_DIR="$dir" "$@" timeout -k 5 90 \
        "$tcrun" --keep-going --timeout 60 -n "$n" "$ft" "$mode" "$victim" "$seed" \
        >"$dir/out" 2>&1 &
    local job=$!
    if [ "$mode" = stop ] || [ "$mode" = stop-hb ]; then
        # the stopped rank never ends: once the others are done, kill it
        for _ in $(seq 1 120); do
            [ "$(grep -c ' failures' "$dir/out")" -ge $((n - 1)) ] && break
            sleep 0.25
        done
        pkill -KILL -f "^$ft $mode $victim $seed" 2>/dev/null
    fi
    wait $job
    local clean=$(grep -c ': 0 failures' "$dir/out")
    local bad=$(grep -c ': FAIL:' "$dir/out")
    grep -ho 'detect_ms [0-9.]*' "$dir/out" | awk '{print $2}' >>"$detect.$name"
    grep -ho 'abort returned in [0-9.]* ms' "$dir/out" | awk '{print $4}' >>"$log/abort_ms"
    grep -ho 'timed out after [0-9.]* ms (bound' "$dir/out" | awk '{print $4}' >>"$log/timeout_ms.$name"
    if [ "$clean" -ge "$want" ] && [ "$bad" -eq 0 ]; then
        pass=$((pass + 1))
        return 0
    fi
    echo "FAIL  $name seed $seed victim $victim ($clean of $want ranks clean); see $dir/out:"
    grep -E ': FAIL:|ERROR' "$dir/out" | head -n 8 | sed 's/^/      /'
    fail=$((fail + 1))
    return 1
}

# want NAME: whether the case is to run (--only)
want() {
    [ -z "$only" ] || echo "$1" | grep -qE "$only"
}

# case NAME TRIALS RANKS WANT MODE [ENV...]: random victims and seeds
case_() {
    local name=$1 count=$2 n=$3 want=$4 mode=$5
    shift 5
    want "$name" || return 0
    local start=$SECONDS f0=$fail
    for t in $(seq 1 "$count"); do
        local seed=$((RANDOM * 32768 + RANDOM)) victim=$((RANDOM % n))
        [ "$mode" = kill-shrink ] && victim=$((RANDOM % (n - 1)))
        one "$name" "$n" "$want" "$mode" "$victim" "$seed" "$@" || true
    done
    echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  $name: $count trials, $n ranks ($((SECONDS - start)) s)"
}

for algo in ring recursive_doubling rabenseifner double_binary_tree; do
    case_ "kill-during-$algo" "$trials" 8 7 kill-during TC_ALGO_ALL_REDUCE=$algo
done
case_ kill-before $((trials / 2 + 1)) 8 7 kill-before
# the survivors' barrier is their first small-message operation: its vote may start after the
# failure broke the communicator (a hang before the fix in tc_rt_work_run_internal)
case_ kill-after $((trials * 2)) 8 7 kill-after
case_ kill-shrink $((trials / 2 + 1)) 8 6 kill-shrink
case_ abort $((trials / 2 + 1)) 8 7 abort
case_ any-source 2 4 3 any-source
case_ sent-then-left 2 3 3 sent-then-left
case_ sent-then-left-tcp 2 3 3 sent-then-left TC_SHM=0
case_ mismatch-check 2 4 4 mismatch TC_CHECK=1
case_ kill-during-tcp 3 4 3 kill-during TC_SHM=0

# Sends that the victim never receives: the timeout names it. Without heartbeats: their
# progress thread would take the sends in over TCP while the victim sleeps.
case_ unreceived 1 2 2 unreceived TC_HEARTBEAT_MS=0
case_ unreceived-tcp 1 2 2 unreceived TC_SHM=0 TC_HEARTBEAT_MS=0
case_ revoke 3 8 8 revoke
case_ slow 2 4 4 slow TC_TIMEOUT_S=20 TC_HEARTBEAT_MS=200
# A rank silent for 3 s (no heartbeats of its own) whose process runs on the same node, as on a
# node with far more ranks than cores: its neighbours see it alive and fail nobody (before, they
# failed it after 1.6 s: 256 ranks on 2 cores lost their first barrier that way).
case_ slow-mute 2 4 4 slow-mute TC_TIMEOUT_S=20 TC_HEARTBEAT_MS=200
# A stopped rank with heartbeats every 200 ms (8 missed, the default): found in about 1.7 s, not at
# the timeout.
case_ stop-hb $((trials / 2 + 1)) 8 7 stop-hb TC_TIMEOUT_S=60 TC_HEARTBEAT_MS=200

if want cut; then
# A cut TCP link: every rank ends (failure or timeout, none hangs) and the
# ranks that used the link name the victim.
start=$SECONDS f0=$fail
for t in 1 2; do
    seed=$((RANDOM * 32768 + RANDOM)) victim=$((RANDOM % 4))
    if one cut 4 4 cut "$victim" "$seed" TC_SHM=0 TC_TIMEOUT_S=5 &&
        [ "$(grep -c 'names_victim=1' "$log/cut.$seed/out")" -lt 1 ]; then
        echo "FAIL  cut seed $seed: no rank named the victim $victim"
        fail=$((fail + 1)) pass=$((pass - 1))
    fi
done
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  cut TCP connections: 2 trials ($((SECONDS - start)) s)"
fi # cut

if want stop; then
# SIGSTOP without heartbeats (on by default: they would find it first): the others time out at
# the bound; tc-fr names the stopped rank.
start=$SECONDS f0=$fail
for t in $(seq 1 $((trials / 2 + 1))); do
    seed=$((RANDOM * 32768 + RANDOM)) victim=$((RANDOM % 8))
    if one stop 8 7 stop "$victim" "$seed" TC_TIMEOUT_S=3 TC_HEARTBEAT_MS=0; then
        verdict=$("$tcfr" "$log/stop.$seed" | grep VERDICT)
        # every dump names one run, the job's (tcrun drew its secret)
        runs=$(grep -o '"run": [^,]*' "$log/stop.$seed"/tc_fr.*.json | sed 's/^[^:]*://' | sort -u)
        if [ "$(wc -l <<<"$runs")" != 1 ] || ! grep -qE '"run": "[0-9a-f]{16}"' <<<"$runs"; then
            echo "FAIL  stop seed $seed: the dumps do not name one run: $runs"
            fail=$((fail + 1)) pass=$((pass - 1))
        elif ! echo "$verdict" | grep -qE ": rank $victim\$"; then
            echo "FAIL  stop seed $seed: tc-fr says '$verdict', the stopped rank is $victim"
            fail=$((fail + 1)) pass=$((pass - 1))
        fi
    fi
done
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  stop + tc-fr: $((trials / 2 + 1)) trials ($((SECONDS - start)) s)"
fi # stop

if want mismatch-fr; then
# A different collective without TC_CHECK: errors or timeouts; tc-fr names the rank.
seed=$((RANDOM * 32768 + RANDOM))
one mismatch-fr 4 3 mismatch 2 "$seed" TC_TIMEOUT_S=3 || true
# (tc-fr's whole output first: grep -q in a pipe would close it early, and under pipefail
# tc-fr's broken pipe would fail the check)
if grep -q 'rank 2 called broadcast' <<<"$("$tcfr" "$log/mismatch-fr.$seed")"; then
    echo "PASS  mismatch without TC_CHECK: tc-fr names rank 2"
    pass=$((pass + 1))
else
    echo "FAIL  mismatch without TC_CHECK: tc-fr does not name rank 2:"
    "$tcfr" "$log/mismatch-fr.$seed" | sed 's/^/      /'
    fail=$((fail + 1))
fi
# the timeouts themselves point at TC_CHECK (they said only which rank they waited for)
if grep -q 'timed out after .*is awaited alike (TC_CHECK=1 names such a call)' \
    "$log/mismatch-fr.$seed/out"; then
    echo "PASS  mismatch without TC_CHECK: the timeouts name TC_CHECK"
    pass=$((pass + 1))
else
    echo "FAIL  mismatch without TC_CHECK: no timeout names TC_CHECK:"
    grep -E 'ERROR|timed out' "$log/mismatch-fr.$seed/out" | head -n 8 | sed 's/^/      /'
    fail=$((fail + 1))
fi
fi # mismatch-fr

if want agree; then
# Shrink's agreement with failures placed inside it (TC_FAULT_INJECT): a rank
# dies before the loop, others die half way through the sends of a round of
# the shrink. Every rank still alive must end with the same members, exactly
# the ranks still alive, and a right all-reduce over them (agree_test).
ag=$bin/tests/fault/agree_test
# agree_one NAME RANKS VICTIM SPEC [WANT]: WANT, when given, is the members list
agree_one() {
    local name=$1 n=$2 victim=$3 spec=$4 want=${5:-}
    local dir=$log/agree-$name
    mkdir -p "$dir"
    TC_TIMEOUT_S=10 TC_FAULT_INJECT="$spec" TC_SHRINK_DENSE_MAX=$agree_dense_max \
        timeout -k 5 60 "$tcrun" --keep-going --timeout 40 -n "$n" "$ag" "$victim" >"$dir/out" 2>&1
    local members alive printed
    members=$(grep -o 'members [0-9,]*' "$dir/out" | sort -u)
    printed=$(grep -o '^\[[0-9]*\] rank [0-9]*: agree' "$dir/out" | awk '{print $3}' | tr -d : |
        sort -n | paste -sd, -)
    if grep -q ': FAIL:' "$dir/out" || [ "$(echo "$members" | wc -l)" -ne 1 ] ||
        [ "$members" != "members $printed" ] || { [ -n "$want" ] && [ "$members" != "members $want" ]; }; then
        echo "FAIL  agree $name ($n ranks, victim $victim, TC_FAULT_INJECT='$spec'):" \
            "alive $printed, ${members:-no members}${want:+, want $want}; see $dir/out:"
        grep -E ': FAIL:|members' "$dir/out" | head -n 8 | sed 's/^/      /'
        fail=$((fail + 1))
        return 1
    fi
    pass=$((pass + 1))
    # the window: the first shrink decided with a rank that died in it, a second removed it
    grep -q 'first shrink size' "$dir/out" &&
        [ "$(grep -o 'first shrink size [0-9]*' "$dir/out" | head -n 1 | awk '{print $4}')" -gt \
            "$(echo "$members" | tr , '\n' | wc -l)" ] && agree_window=$((agree_window + 1))
    return 0
}
start=$SECONDS f0=$fail agree_window=0 agree_dense_max=256
# rank 2 dies in round 1 after its message reached rank 0 only: rank 0 may
# decide in round 1 (rank 2 alive) while the others go on; they must adopt
agree_one window 6 5 "shrink:rank=2:round=1:sends=1" 0,1,3,4
# ... and the rank that decided dies after telling one rank: that rank relays it
agree_one relay 6 5 "shrink:rank=2:round=1:sends=1;shrink:rank=0:round=2:sends=1" 1,3,4
agree_one silent 6 5 "shrink:rank=2:round=1:sends=0" 0,1,3,4
# deaths inside the agreements that confirm the id (the second and later): rank 2 in the
# first's round 1 after one send, then rank 4 in the second's round 1 after one send
agree_one confirm 6 5 "shrink:rank=2:round=1:sends=1:agreement=1" 0,1,3,4
agree_one confirm-silent 6 5 "shrink:rank=2:round=1:sends=0:agreement=1" 0,1,3,4
agree_one confirm-two 6 5 "shrink:rank=2:round=1:sends=1;shrink:rank=4:round=1:sends=1:agreement=1" 0,1,3
# the other kind of point: rank 3 dies as it starts step 1 of the first all-reduce
agree_one step 6 -1 "step:rank=3:op=1:step=1" 0,1,2,4,5
# ... while rank 0 is still looking at the creation's fence (slow: it pauses 1.5 s after it);
# rank 3 took part in the fence, so rank 0's creation succeeds and its all-reduce fails instead
agree_one step-late 6 -1 "step:rank=3:op=1:step=1;fence:rank=0:ms=1500" 0,1,2,4,5
# rank 3 dies at the small-message path's vote, lanes up; rank 0 learns it before its own vote
# (it progresses 1.5 s first), when the others have left theirs: its vote must end at once, not
# wait for them until the timeout (TC_ERR_TIMEOUT at rank 0 before tc_rt_work_link's check)
agree_one vote-late 6 -1 "vote:rank=3;vote:rank=0:ms=1500" 0,1,2,4,5
# a malformed value fails creation, naming what is wrong
for bad in "shrink:rank=1" "shrnk:rank=1:round=1" "shrink:rank=1:round=x" "step:rank=0:op=1:when=2" \
    "fence:rank=1" "vote:ms=5" "vote:rank=1:ms=x" "shrink:rank=1:round=1:agreement=-1"; do
    out=$(TC_FAULT_INJECT="$bad" timeout -k 5 30 "$tcrun" --timeout 20 -n 2 "$ag" -1 2>&1)
    if echo "$out" | grep -q 'create: .*TC_FAULT_INJECT'; then
        pass=$((pass + 1))
    else
        echo "FAIL  agree: TC_FAULT_INJECT='$bad' did not fail creation naming it:"
        echo "$out" | tail -n 4 | sed 's/^/      /'
        fail=$((fail + 1))
    fi
done
# agree_random PREFIX ROUNDS SENDS: trials*2 jobs of 8 ranks, a victim dead before and up to two
# deaths inside shrink, each in a round of 1..ROUNDS of its first or second agreement, after
# 0..SENDS-1 of its sends
agree_random() {
    local t victim spec k r
    for t in $(seq 1 $((trials * 2))); do
        victim=$((RANDOM % 8)) spec=
        for k in 1 2; do
            r=$((RANDOM % 8))
            [ "$r" -eq "$victim" ] && continue
            spec="${spec:+$spec;}shrink:rank=$r:round=$((1 + RANDOM % $2)):sends=$((RANDOM % $3))"
            spec="$spec:agreement=$((RANDOM % 2))"
        done
        agree_one "$1.$t" 8 "$victim" "$spec" || true
    done
}
agree_random random 3 7
# the sparse graph (r +- 2^k, the default above 256 ranks) forced at 8 ranks: 5 neighbours
# each, 7 quiet rounds decide, so deaths fall anywhere in rounds 1 to 12
agree_dense_max=2 agree_random sparse 12 6
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  agree: $((trials * 4 + 9)) trials with deaths inside shrink (in its first or a confirming agreement; half on the sparse graph), at a step and at a vote (one each while rank 0 is slow), 8 malformed values," \
    "$agree_window ended a first shrink holding a rank that died in it ($((SECONDS - start)) s)"
fi # agree

if want create-abort; then
# tc_comm_create_abort(): a creation waiting for a rank that never joins ends
# with TC_ERR_ABORTED within 200 ms of the abort, from a thread or a signal
# handler, under PMIx (tcrun) and the torchrun environment (rank 0 waiting in
# its store's fence; rank 1 waiting for a store that is not there).
ca=$bin/tests/fault/create_abort_test
start=$SECONDS f0=$fail
port=$((20000 + RANDOM % 20000))
for spec in "tcrun 2 thread 1" "tcrun 3 signal 2" "env 0 thread 1" "env 1 signal 0"; do
    set -- $spec
    dir=$log/create-abort.$1.$2.$3
    mkdir -p "$dir"
    if [ "$1" = tcrun ]; then
        timeout -k 5 60 "$tcrun" --timeout 50 -n "$2" "$ca" "$3" "$4" 300 >"$dir/out" 2>&1
    else
        port=$((port + 1))
        timeout -k 5 60 env MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$2 WORLD_SIZE=2 \
            LOCAL_RANK=$2 LOCAL_WORLD_SIZE=2 "$ca" "$3" "$4" 300 >"$dir/out" 2>&1
    fi
    rc=$?
    if [ $rc -eq 0 ] && grep -q 'TC_ERR_ABORTED' "$dir/out" && ! grep -q FAIL "$dir/out"; then
        pass=$((pass + 1))
    else
        echo "FAIL  create-abort $spec (exit $rc):"
        sed 's/^/      /' "$dir/out" | head -n 8
        fail=$((fail + 1))
    fi
done
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  create-abort: 4 trials ($((SECONDS - start)) s)"
grep -ho 'ABORTED [0-9.]* ms after the abort ([a-z]*)' "$log"/create-abort.*/out | sed 's/^/      /'
fi # create-abort

if want create-missing; then
# A rank that exits before tc_comm_create (the fence times out) or dies inside
# it (TC_FAULT_INJECT=create:rank=V: the PMIx server completes the fence without
# it, or with PARTIAL SUCCESS): every other rank's error names it. It used to
# say "PMIx_Fence ... PARTIAL SUCCESS" naming nobody, or succeed.
cm=$bin/tests/fault/create_missing_test
start=$SECONDS f0=$fail
for spec in "exit 3 1" "exit 4 0" "kill 3 1" "kill 4 3" "kill 2 0"; do
    set -- $spec
    dir=$log/create-missing.$1.$2.$3
    mkdir -p "$dir"
    timeout -k 5 60 "$tcrun" --keep-going --timeout 50 -n "$2" "$cm" "$1" "$3" 5000 >"$dir/out" 2>&1
    if [ "$(grep -c "create_missing: OK .*rank $3" "$dir/out")" -eq $(($2 - 1)) ] &&
        ! grep -q 'create_missing: FAIL' "$dir/out"; then
        pass=$((pass + 1))
    else
        echo "FAIL  create-missing $spec:"
        sed 's/^/      /' "$dir/out" | head -n 8
        fail=$((fail + 1))
    fi
done
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  create-missing: 5 trials, the missing rank named ($((SECONDS - start)) s)"
fi # create-missing

# every_ok NAME RANKS PROG ARGS...: a job whose every rank prints "<prog>: OK"
every_ok() {
    local name=$1 n=$2 prog=$3
    shift 3
    local dir=$log/$name word
    word=$(basename "$prog" _test)
    mkdir -p "$dir"
    timeout -k 5 90 "$tcrun" --keep-going --timeout 60 -n "$n" "$prog" "$@" >"$dir/out" 2>&1
    # OK_RANKS: how many ranks say OK when some are meant to die
    if [ "$(grep -c "$word: OK" "$dir/out")" -eq "${OK_RANKS:-$n}" ]; then
        pass=$((pass + 1))
    else
        echo "FAIL  $name:"
        grep -v "$word: OK" "$dir/out" | sed 's/^/      /' | head -n 8
        fail=$((fail + 1))
    fi
}

if want stop-resume; then
# A stopped rank the others shrank away, woken before it shrinks: its shrink fails as cut off
# (it made a communicator of itself alone), the others' communicator is right.
start=$SECONDS f0=$fail
for spec in "3 1" "4 3" "4 0"; do
    set -- $spec
    every_ok "stop-resume.$1.$2" "$1" "$bin/tests/fault/stop_resume_test" "$2" "$log/stop-resume.$1.$2"
done
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  stop-resume: 3 trials ($((SECONDS - start)) s)"
fi # stop-resume

if want revoke-chain; then
# Every rank revokes a shrink's communicator the moment it has it, 10 rounds: a quicker rank's
# revoke reached a slower one before its shrink made the communicator, and that shrink failed.
start=$SECONDS f0=$fail
for t in 1 2 3; do
    every_ok "revoke-chain.$t" 4 "$bin/tests/fault/revoke_chain_test" 10
done
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  revoke-chain: 3 trials of 10 rounds ($((SECONDS - start)) s)"
fi # revoke-chain

if want abort-shrink; then
# tc_comm_abort() ends a shrink another thread is inside (it went on until its timeout)
start=$SECONDS f0=$fail
every_ok "abort-shrink.2" 2 "$bin/tests/fault/abort_shrink_test"
every_ok "abort-shrink.3" 3 "$bin/tests/fault/abort_shrink_test"
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  abort-shrink: 2 and 3 ranks ($((SECONDS - start)) s)"
fi # abort-shrink

if want withdraw; then
# A local abort takes back a send its receiver was told of (over shared memory, only
# announced: the receiver reads the sender's memory): the receive fails naming the sender, or
# gets the bytes as sent; never what the sender wrote after its abort.
start=$SECONDS f0=$fail
every_ok "withdraw.shm" 2 "$bin/tests/fault/withdraw_test" 5
TC_SHM=0 every_ok "withdraw.tcp" 2 "$bin/tests/fault/withdraw_test" 5
# a broadcast whose root is late: the others give up, withdrawing more than 16 pieces per peer
every_ok "withdraw.late-root.3" 3 "$bin/tests/fault/withdraw_test" late-root
every_ok "withdraw.late-root.4" 4 "$bin/tests/fault/withdraw_test" late-root
# what the aborting rank no longer receives is freed with the communicator (heap bounded)
every_ok "withdraw.leftovers.shm" 2 "$bin/tests/fault/withdraw_test" leftovers 150
TC_SHM=0 every_ok "withdraw.leftovers.tcp" 2 "$bin/tests/fault/withdraw_test" leftovers 150
# a rank dies in a batch with every other: a survivor whose sender withdrew its message on
# learning of the death must name the dead rank, not the sender (it did, 9 runs of 12)
for t in $(seq 1 $((trials * 2))); do
    OK_RANKS=3 every_ok "withdraw.cause.$t" 4 "$bin/tests/fault/withdraw_test" cause
    OK_RANKS=3 every_ok "withdraw.cause-p2p.$t" 4 "$bin/tests/fault/withdraw_test" cause-p2p
done
echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  withdraw: shm and tcp, 5 rounds each; a late root at 3 and 4 ranks; 150 rounds of leftovers; $((trials * 2)) deaths in a batch and as many among single operations ($((SECONDS - start)) s)"
fi # withdraw

if want example; then
# The documentation's example: a training loop that loses a rank and goes on.
dir=$log/example
mkdir -p "$dir"
timeout -k 5 90 "$tcrun" --keep-going --timeout 60 -n 4 "$bin/tests/fault/resilient_training" \
    --die-rank 2 --die-step 50 >"$dir/out" 2>&1
if [ "$(grep -c '200 steps, 1 recoveries, 0 wrong sums' "$dir/out")" -eq 3 ]; then
    echo "PASS  docs/examples/resilient_training: 3 survivors finish with correct sums"
    pass=$((pass + 1))
else
    echo "FAIL  docs/examples/resilient_training; last lines:"
    tail -n 12 "$dir/out" | sed 's/^/      /'
    fail=$((fail + 1))
fi
fi # example

if want srun; then
# Under Slurm (srun --mpi=pmix, a one-node cluster on loopback): a rank killed
# during the loop, with -K0 so that Slurm leaves the survivors running; they
# detect, shrink and check, as under tcrun. tcomms' own PMIx notices are sent
# to non-default handlers only: Slurm's default handler would kill the step.
slurm_dir=$log/slurm
if "$here/../integration/slurm_cluster.sh" start "$slurm_dir" >"$log/slurm-start.out" 2>&1; then
    start=$SECONDS f0=$fail
    for t in 1 2; do
        seed=$((RANDOM * 32768 + RANDOM)) victim=$((RANDOM % 4))
        dir=$log/srun-kill.$seed
        mkdir -p "$dir"
        SLURM_CONF=$slurm_dir/slurm.conf TC_FT_DIR=$dir timeout -k 5 90 \
            srun -O -K0 -n 4 --mpi=pmix "$ft" kill-during "$victim" "$seed" >"$dir/out" 2>&1
        if [ "$(grep -c ': 0 failures' "$dir/out")" -ge 3 ] && ! grep -q ': FAIL:' "$dir/out"; then
            pass=$((pass + 1))
            grep -ho 'detect_ms [0-9.]*' "$dir/out" | awk '{print $2}' >>"$detect.kill-srun"
        else
            echo "FAIL  srun kill-during seed $seed victim $victim; see $dir/out:"
            grep -E ': FAIL:|ERROR|error' "$dir/out" | head -n 8 | sed 's/^/      /'
            fail=$((fail + 1))
        fi
    done
    dir=$log/srun-example
    mkdir -p "$dir"
    SLURM_CONF=$slurm_dir/slurm.conf timeout -k 5 90 srun -O -K0 -n 4 --mpi=pmix \
        "$bin/tests/fault/resilient_training" --die-rank 1 --die-step 80 >"$dir/out" 2>&1
    if [ "$(grep -c '200 steps, 1 recoveries, 0 wrong sums' "$dir/out")" -eq 3 ]; then
        pass=$((pass + 1))
    else
        echo "FAIL  resilient_training under srun; last lines:"
        tail -n 12 "$dir/out" | sed 's/^/      /'
        fail=$((fail + 1))
    fi
    "$here/../integration/slurm_cluster.sh" stop "$slurm_dir"
    echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  srun -K0: 2 kill-during trials and the example ($((SECONDS - start)) s)"
else
    echo "FAIL  the one-node Slurm cluster did not start:"
    tail -n 20 "$log/slurm-start.out" | sed 's/^/      /'
    fail=$((fail + 1))
fi
fi # srun

if want env; then
# Under the torchrun environment (no launcher, no PMIx: the ranks bootstrap
# through rank 0's store, as run by tests/integration/run_torchrun_env.sh):
# a revoke reaches every other rank through the store's notices, and a rank
# killed during the loop is found, reported and shrunk away as under tcrun.
# The victim is never rank 0, which serves the store. Ranks are started here,
# not by run_torchrun_env.sh, which stops every rank when one dies.
. "$here/../integration/free_port.sh"
# env_one NAME WANT MODE VICTIM SEED [ENV...]: 4 ranks, bounded by `timeout`
env_one() {
    local name=$1 want=$2 mode=$3 victim=$4 seed=$5 n=4
    shift 5
    local dir=$log/$name.$seed pids=() r
    mkdir -p "$dir"
    # a port nothing uses now: a random one could be a live connection's (it failed so)
    local env_port
    env_port=$(free_port) || { echo "FAIL  $name: found no free port"; fail=$((fail + 1)); return 1; }
    for ((r = 0; r < n; r++)); do
        env TC_FT_DIR="$dir" TC_FR_DIR="$dir" MASTER_ADDR=127.0.0.1 MASTER_PORT=$env_port \
            RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n TC_BOOT_LINGER_S=10 "$@" \
            timeout -k 5 90 "$ft" "$mode" "$victim" "$seed" >"$dir/out.$r" 2>&1 </dev/null &
        pids+=($!)
    done
    for r in "${pids[@]}"; do { wait "$r"; } 2>/dev/null; done # a killed victim is expected
    cat "$dir"/out.* >"$dir/out"
    local clean=$(grep -c ': 0 failures' "$dir/out")
    local bad=$(grep -c ': FAIL:' "$dir/out")
    grep -ho 'detect_ms [0-9.]*' "$dir/out" | awk '{print $2}' >>"$detect.$name"
    if [ "$clean" -ge "$want" ] && [ "$bad" -eq 0 ]; then
        pass=$((pass + 1))
        return 0
    fi
    echo "FAIL  $name seed $seed victim $victim ($clean of $want ranks clean); see $dir/out:"
    grep -E ': FAIL:|ERROR' "$dir/out" | head -n 8 | sed 's/^/      /'
    fail=$((fail + 1))
    return 1
}
for spec in "revoke-env 4 revoke" "kill-during-env 3 kill-during"; do
    set -- $spec
    start=$SECONDS f0=$fail
    for t in $(seq 1 $((trials / 2 + 1))); do
        env_one "$1" "$2" "$3" $((1 + RANDOM % 3)) $((RANDOM * 32768 + RANDOM)) || true
    done
    echo "$([ $fail -eq $f0 ] && echo PASS || echo FAIL)  $1 (torchrun environment): $((trials / 2 + 1)) trials, 4 ranks ($((SECONDS - start)) s)"
done
fi # env

# dist LABEL FILE...: the distribution of the numbers in the files
dist() {
    local label=$1
    shift
    cat "$@" 2>/dev/null | sort -n | awk -v label="$label" '
        { v[NR] = $1 }
        END {
            if (NR == 0) exit
            printf "%s, n=%d: min %.1f  median %.1f  p90 %.1f  p99 %.1f  max %.1f\n", label,
                   NR, v[1], v[int((NR + 1) / 2)], v[int(NR * 0.9 + 0.5)], v[int(NR * 0.99 + 0.5)], v[NR]
        }'
}
dist "detection (ms), the 8-rank all-reduce loops (kill-during, 4 algorithms)" "$detect".kill-during-{ring,recursive_doubling,rabenseifner,double_binary_tree}
dist "detection (ms), every survivor of every kill trial" "$detect".kill-*
dist "detection (ms), a stopped rank, heartbeats every 200 ms" "$detect".stop-hb
dist "abort with an all-reduce pending on a dead rank (ms)" "$log/abort_ms"
dist "stopped rank: the others' time to TC_ERR_TIMEOUT (ms, bound 3000)" "$log/timeout_ms.stop"
if [ "$(cat "$detect".kill-* 2>/dev/null | sort -n | tail -n 1 | cut -d. -f1)" -gt 2000 ] 2>/dev/null; then
    echo "FAIL  a survivor took more than 2 s to see the failure"
    fail=$((fail + 1))
fi
if [ "$(sort -n "$log/abort_ms" 2>/dev/null | tail -n 1 | cut -d. -f1)" -ge 100 ] 2>/dev/null; then
    echo "FAIL  an abort took 100 ms or more"
    fail=$((fail + 1))
fi
# The killed ranks leave pair segments in /dev/shm that no one attached (and ranks that exit
# without destroying their communicators too): the next job's contexts remove those whose
# processes all ended (docs/transport_shm.md, "Leftovers").
if [ -d /dev/shm ]; then
    if ! timeout -k 5 90 "$tcrun" --timeout 60 -n 2 "$bin/tests/integration/allreduce_test" \
        >"$log/after.out" 2>&1; then
        echo "FAIL  the job after the trials failed; see $log/after.out"
        fail=$((fail + 1))
    fi
    left=$(comm -13 <(echo "$shm_before") <(ls /dev/shm | grep '^tcomms-' | sort))
    if [ -n "$left" ]; then
        echo "FAIL  pair segments of the trials left in /dev/shm after the next job:" $left
        fail=$((fail + 1))
    else
        echo "PASS  no pair segment of the trials left in /dev/shm after the next job"
    fi
fi
echo "fault injection: $pass trials passed, $fail failed (logs: $log)"
[ "$fail" -eq 0 ] && rm -rf "$log"
[ "$fail" -eq 0 ]
