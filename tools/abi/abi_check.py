#!/usr/bin/env python3
"""Compare the public ABI of tcomms with its record.

Usage:
  tools/abi/abi_check.py --record tools/abi/tcomms.abi --include DIR --lib LIB.so
                         [--cc clang] [--probe-cc gcc] [--cflags "..."] [--update] [-v]

Dumps the current ABI with abi_dump.py (DIR: installed headers, DIR/tcomms/...;
LIB.so: the shared library) and compares it with the record, line by line
(see abi_dump.py for the format).

Exit status:
  0  the ABI matches the record (or --update wrote the record);
  1  the record is out of date but nothing breaks: only additions (functions,
     symbols, types, fields of new types, enum constants) or a version change;
     or incompatible changes that a major version bump allows. Update the
     record (the message says how);
  2  an incompatible change (something removed or changed: a field moved or
     resized or retyped, a struct's size or alignment, a prototype, an enum
     value, a symbol, the SONAME) without a major version bump; or the
     headers and the library disagree (a function declared in the headers that
     the library does not export, an exported symbol not starting with tc_,
     TC_VERSION disagreeing with TC_VERSION_MAJOR/MINOR/PATCH);
  3  the check could not run (a header that does not compile, no record, ...).
"""

import argparse
import os
import re
import shlex
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abi_dump  # noqa: E402

KIND_WORDS = {
    "func": "function", "inline": "inline function", "var": "variable",
    "typedef": "typedef", "struct": "struct", "union": "union", "field": "field",
    "enum": "enum", "const": "enum constant", "symbol": "symbol", "soname": "soname",
}

_ATTR_RE = re.compile(r"\b(offset|size|align|bitfield) (\S+)")


def parse_version(v):
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", v or "")
    return tuple(int(x) for x in m.groups()) if m else None


def split_key(key):
    kind, _, name = key.partition(" ")
    return kind, name


def describe(key):
    kind, name = split_key(key)
    word = KIND_WORDS.get(kind, kind)
    return f"{word} {name}" if name else word


def attrs(value):
    """"offset 24 size 8 type int64_t (in anonymous union)" -> dict."""
    d = dict(_ATTR_RE.findall(value.split(" type ", 1)[0]))
    if " type " in value or value.startswith("type "):
        d["type"] = value.split("type ", 1)[1]
    return d


def explain_change(key, old, new):
    kind, _ = split_key(key)
    if kind in ("field", "struct", "union", "enum"):
        a, b = attrs(old), attrs(new)
        diffs = [f"{k} {a.get(k, '-')} -> {b.get(k, '-')}"
                 for k in ("offset", "size", "align", "bitfield", "type") if a.get(k) != b.get(k)]
        if diffs:
            return f"{describe(key)}: " + ", ".join(diffs)
    if kind == "const":
        ov, _, oe = old.partition(" in ")
        nv, _, ne = new.partition(" in ")
        parts = []
        if ov != nv:
            parts.append(f"value {ov} -> {nv}")
        if oe != ne:
            parts.append(f"moved from {oe} to {ne}")
        return f"{describe(key)}: " + ", ".join(parts)
    if kind in ("func", "inline"):
        return f"{describe(key)}: prototype {old} -> {new}"
    return f"{describe(key)}: {old} -> {new}"


def users(cur, tkey):
    """Functions and variables whose declared type names the type of `tkey`
    (`struct S` / `union S` / `enum S`) directly or through a typedef."""
    kind, name = split_key(tkey)
    spellings = {f"{kind} {name}"}
    for k, v in cur.items():
        if k.startswith("typedef ") and v == f"{kind} {name}":
            spellings.add(split_key(k)[1])
    pat = re.compile(r"(?<![\w.])(" + "|".join(re.escape(s) for s in sorted(spellings)) + r")(?![\w.])")
    return [split_key(k)[1] for k, v in cur.items()
            if split_key(k)[0] in ("func", "inline", "var") and pat.search(v)]


def counts(rec):
    kinds = [split_key(k)[0] for k in rec]
    return (kinds.count("func"),
            sum(kinds.count(k) for k in ("struct", "union", "enum")),
            kinds.count("symbol"))


def consistency(cur, pr, lib):
    errs = []
    syms = {split_key(k)[1].split("@")[0] for k in cur if k.startswith("symbol ")}
    for k in cur:
        kind, name = split_key(k)
        if kind == "var" and cur[k].startswith("static "):
            continue  # defined in every file that includes the header
        if kind in ("func", "var") and name not in syms:
            errs.append(f"{describe(k)} is declared in the public headers but {lib} does not "
                        f"export it")
        if kind == "symbol" and not name.split("@")[0].startswith("tc_"):
            errs.append(f"{lib} exports {name}, which does not start with tc_")
    v = parse_version(cur.get("version"))
    if v and pr.get("tc_version") is not None:
        tcv = v[0] * 10000 + v[1] * 100 + v[2]
        if pr["tc_version"] != tcv:
            errs.append(f"TC_VERSION is {pr['tc_version']} but TC_VERSION_MAJOR/MINOR/PATCH say "
                        f"{cur['version']} (= {tcv})")
    return errs


def update_command(a):
    me = os.path.join(os.path.dirname(sys.argv[0]) or ".", "abi_dump.py")
    cmd = [me, "--include", a.include, "--lib", a.lib]
    if a.cc != "clang":
        cmd += ["--cc", a.cc]
    if a.probe_cc != "gcc":
        cmd += ["--probe-cc", a.probe_cc]
    if a.cflags:
        cmd += ["--cflags=" + a.cflags]
    return shlex.join(cmd) + " > " + shlex.quote(a.record)


def main():
    ap = argparse.ArgumentParser(description="Compare the ABI of tcomms with its record.")
    ap.add_argument("--record", required=True, metavar="FILE", help="the ABI record")
    abi_dump.add_common_args(ap)
    ap.add_argument("--update", action="store_true", help="write the current ABI to FILE")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also list exported symbols that no public header declares")
    a = abi_dump.parse_args(ap)
    sys.setrecursionlimit(10000)

    try:
        lines, _, pr, _ = abi_dump.dump(a.include, a.lib, a.cc, a.probe_cc,
                                        shlex.split(a.cflags), a.keep_temp)
    except abi_dump.ToolError as e:
        print(f"abi: {e}", file=sys.stderr)
        return 3
    cur = abi_dump.parse_record("\n".join(lines))
    errs = consistency(cur, pr, a.lib)
    n_f, n_t, n_s = counts(cur)

    if a.verbose:
        declared = {split_key(k)[1] for k in cur if split_key(k)[0] in ("func", "var")}
        extra = [split_key(k)[1] for k in cur
                 if k.startswith("symbol ") and split_key(k)[1].split("@")[0] not in declared]
        print(f"abi: {len(extra)} exported symbols are declared in no public header:")
        for s in extra:
            print(f"  {s}")

    if a.update:
        with open(a.record, "w") as f:
            f.write("\n".join(abi_dump.header_comment() + lines) + "\n")
        for e in errs:
            print(f"abi: warning: {e}", file=sys.stderr)
        print(f"abi: wrote {a.record} ({n_f} functions, {n_t} types, {n_s} symbols)")
        return 0

    try:
        with open(a.record) as f:
            old = abi_dump.parse_record(f.read())
    except OSError as e:
        print(f"abi: cannot read the record {a.record}: {e.strerror}; create it with "
              f"{update_command(a)}", file=sys.stderr)
        return 3

    old_v, new_v = old.get("version", "unknown"), cur.get("version", "unknown")
    ov, nv = parse_version(old_v), parse_version(new_v)
    major_bump = bool(ov and nv and nv[0] > ov[0])

    incompatible, added, notes = [], [], []
    for k, v in old.items():
        if k == "version":
            continue
        if k not in cur:
            incompatible.append(f"{describe(k)} removed (was: {v})" if v else f"{describe(k)} removed")
        elif cur[k] != v:
            msg = explain_change(k, v, cur[k])
            kind = split_key(k)[0]
            if kind in ("struct", "union", "enum"):
                u = users(cur, k)
                if u:
                    msg += " (used by: " + ", ".join(u) + ")"
            incompatible.append(msg)
    for k, v in cur.items():
        if k != "version" and k not in old:
            added.append(f"{describe(k)}: {v}" if v else describe(k))
    if old_v != new_v:
        if ov and nv and nv < ov:
            incompatible.append(f"version went backwards: {old_v} -> {new_v}")
        else:
            notes.append(f"version {old_v} -> {new_v}")
    elif added and not incompatible:
        notes.append(f"note: additions without a version change (still {new_v})")

    for e in errs:
        print(f"abi: error: {e}")
    for m in incompatible:
        print(f"abi: incompatible: {m}")
    for m in added:
        print(f"abi: added: {m}")
    for m in notes:
        print(f"abi: {m}")

    if errs or (incompatible and not major_bump):
        if errs:
            print("abi: the public headers and the library disagree")
        if incompatible and not major_bump:
            print("abi: INCOMPATIBLE change")
        return 2
    if incompatible:
        print(f"abi: incompatible changes allowed by the major version bump {old_v} -> {new_v}; "
              f"update the record: {update_command(a)}")
        return 1
    if added:
        print(f"abi: compatible additions; update the record: {update_command(a)}")
        return 1
    if old_v != new_v:
        print(f"abi: the version changed; update the record: {update_command(a)}")
        return 1
    print(f"abi: matches the record ({n_f} functions, {n_t} types, {n_s} symbols)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
