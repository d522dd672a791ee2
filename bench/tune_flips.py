"""Which misses of a tc-tune study's --validate are the two jobs disagreeing.

    python3 bench/tune_flips.py OUTDIR...

OUTDIR is tests/cluster/tune_study.sh's: tune.RATE.log (the first job, tc-tune -o --rules: rank
0's "fastest" lines with every algorithm's time) and validate.RATE.txt (the second job's table).
For each cell the selection missed (ok = no), it prints what the first job measured for the
algorithm chosen and for the one the second job found fastest: a "flip" when the first job had
the choice at least as fast, so no selection made from the first job's measurements could have
been right in the second; then the count per table.
"""
import re
import sys


def tune_times(path):
    times = {}
    for line in open(path):
        m = re.match(r'\[0\] # (\S+)\s+(\d+)\s+fastest \S+\s+[\d.]+ us (.*)', line)
        if m:
            times[(m.group(1), int(m.group(2)))] = {
                k: float(v) for k, v in (x.split('=') for x in m.group(3).split())}
    return times


def misses(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) > 8 and not line.startswith('#') and f[7] == 'no':
            out.append((f[0], int(f[1]), f[2], float(f[3]), f[4], float(f[5])))
    return out


def main(dirs):
    for d in dirs:
        for rate in (1000, 2000, 5000):
            try:
                times = tune_times(f'{d}/tune.{rate}.log')
                missed = misses(f'{d}/validate.{rate}.txt')
            except FileNotFoundError:
                continue
            flips = 0
            for coll, nbytes, chose, chose_us, fast, fast_us in missed:
                t = times.get((coll, nbytes), {})
                if chose not in t or fast not in t:
                    print(f'{rate} {coll} {nbytes}: not measured by the first job')
                    continue
                flip = t[chose] <= t[fast]
                flips += flip
                print(f'{rate} {coll} {nbytes}: chose {chose} {chose_us:.1f} us, fastest {fast} '
                      f'{fast_us:.1f}; first job {chose} {t[chose]:.1f}, {fast} {t[fast]:.1f}'
                      f'{": flip" if flip else ""}')
            print(f'# {d} {rate} Mbit/s: {len(missed)} misses, {flips} flips')


if __name__ == '__main__':
    main(sys.argv[1:])
