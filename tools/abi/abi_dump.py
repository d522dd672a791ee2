#!/usr/bin/env python3
"""Print the public ABI of tcomms as a sorted, line-oriented text record.

Usage:
  tools/abi/abi_dump.py --include DIR --lib LIB.so [--cc clang] [--probe-cc gcc]
                        [--cflags "-I/extra/include ..."] > tools/abi/tcomms.abi

DIR is an installed include folder (DIR/tcomms/...); LIB.so the shared library.

Where the facts come from:
- declarations: `clang -Xclang -ast-dump=json -fsyntax-only` on a generated
  translation unit that includes every DIR/tcomms/**/*.h (-std=c11
  -D_GNU_SOURCE); only declarations located inside DIR/tcomms count (not
  those of <infiniband/verbs.h> and other system headers);
- sizes, alignments, offsets, enum values and the version: a generated C probe
  program (offsetof / sizeof / _Alignof) compiled with gcc against DIR and run;
- symbols: `nm -D --defined-only -S LIB`; the SONAME: `readelf -d LIB`.

Record format (version 1). Every line is `KIND NAME: VALUE` (or `KIND: VALUE`);
`KIND NAME` is the line's key, unique in the record; abi_check.py compares
records key by key. Lines starting with '#' and blank lines are comments.

  version: 0.1.0                      TC_VERSION_MAJOR.MINOR.PATCH of tcomms/tcomms.h
                                      (else TC_VERSION = major*10000+minor*100+patch
                                      decoded; else "unknown")
  soname: libtcomms.so.0              SONAME of LIB ("none" when it has none)
  func tc_comm_create: tc_status_t (const tc_comm_opts_t *, tc_comm_t **)
                                      an extern function declared in the headers
                                      (name, then its prototype as clang prints it)
  inline tc_list_init: void (tc_list_t *)
                                      a static inline function of the headers (API,
                                      not exported)
  var tc_tp_self_ops: const tc_tp_ops_t
                                      a variable declared in the headers ("static "
                                      before the type for a static one)
  typedef tc_comm_opts_t: struct tc_comm_opts
  struct tc_comm_opts: size 40 align 8
                                      (or `union`); named by its tag, else its
                                      typedef; an unnamed struct/union nested as
                                      field F of S is named `S.F`
  field tc_comm_opts.timeout_ms: offset 24 size 8 type int64_t
  field tc_x.bits: bitfield 3 type unsigned int
                                      (bitfields: width and type, no offset)
  field tc_x.tail: offset 16 size flexible type char[]
                                      fields follow their struct in declaration
                                      order; members of an anonymous struct/union
                                      member are listed as fields of the enclosing
                                      named struct (as C code names them), with
                                      "(in anonymous union)" appended
  enum tc_bootstrap: size 4 align 4   (anonymous enums without a typedef or field
                                      name have no such line)
  const TC_BOOTSTRAP_PMIX: 1 in enum tc_bootstrap
                                      an enum constant, its value from the compiler,
                                      and its enum ("anonymous enum" for those)
  symbol tc_comm_create: func         a dynamic symbol LIB defines (nm -D)
  symbol tc_tp_self_ops: object size 168

Sorted: version, soname, func, inline, var, typedef (each by name), then
struct/union blocks by name (each followed by its fields), enum blocks by
name (each followed by its constants), constants of anonymous enums, symbols.
Type spellings are clang's, with "(unnamed struct at FILE:L:C)" replaced by
the name above, so the record does not depend on where DIR is.

Exit status: 0 printed; 3 the tool could not run (a header that does not
compile, a missing tool); the message says why.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

FORMAT_VERSION = 1

# Linker-generated symbols that some toolchains export from every shared
# object; they are not part of the library's interface.
LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}

NM_FUNC = set("TtWiI")
NM_OBJECT = set("DdBbRrVvGgSsCu")

_ANON_RE = re.compile(
    r"(?:\b(?:struct|union|enum)\s+)?(?:[A-Za-z_][\w:]*::)?"
    r"\((?:unnamed|anonymous)(?: (?:struct|union|enum))? at ([^()]*?):(\d+):(\d+)\)")


class ToolError(Exception):
    """The dump could not be made (exit 3)."""


def run(cmd, what, cwd=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise ToolError(f"{what}: cannot run {cmd[0]}: {e.strerror}")
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip()
        raise ToolError(f"{what} failed (exit {p.returncode}): {shlex.join(cmd)}\n{err}")
    return p.stdout


# ---------------------------------------------------------------------------
# headers -> declarations (clang AST)
# ---------------------------------------------------------------------------

def public_headers(include_dir):
    root = os.path.join(include_dir, "tcomms")
    if not os.path.isdir(root):
        raise ToolError(f"no folder {root}")
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".h"):
                out.append(os.path.relpath(os.path.join(d, f), include_dir))
    if not out:
        raise ToolError(f"no headers under {root}")
    return sorted(out)


class LocTracker:
    """Follows clang's JSON source locations, which omit "file" and "line"
    when unchanged from the previous location printed: walks every node in
    document order and stamps each declaration with (file, line, col) of its
    expansion location."""

    def __init__(self):
        self.file = None
        self.line = None

    def bare(self, loc):
        if "file" in loc:
            self.file = loc["file"]
        if "line" in loc:
            self.line = loc["line"]
        return (self.file, self.line, loc.get("col"))

    def loc(self, loc):
        if "offset" in loc:
            return self.bare(loc)
        where = None
        for k in ("spellingLoc", "expansionLoc"):  # the order clang prints them
            if k in loc and "offset" in loc[k]:
                where = self.bare(loc[k])
        return where  # the expansion location when both exist

    def walk(self, node):
        stack = [node]
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                if "offset" in x:  # a bare location; never descend into includedFrom
                    self.bare(x)
                    continue
                if "spellingLoc" in x or "expansionLoc" in x:
                    self.loc(x)
                    continue
                # children in document order; a node's own "loc" becomes a
                # (node,) marker that stamps the node when its turn comes
                todo = [(x,) if k == "loc" and "kind" in x else v
                        for k, v in x.items() if isinstance(v, (dict, list))]
                stack.extend(reversed(todo))
            elif isinstance(x, list):
                stack.extend(reversed(x))
            elif isinstance(x, tuple):  # (node,): stamp it with where its location points
                x[0]["_where"] = self.loc(x[0]["loc"])


class Model:
    def __init__(self):
        self.funcs = {}      # name -> prototype
        self.inlines = {}    # name -> prototype
        self.vars = {}       # name -> type
        self.typedefs = {}   # name -> type
        self.records = {}    # name -> {"kind", "texpr", "fields": [...]}
        self.enums = {}      # name -> {"texpr", "consts": [names]}
        self.anon_consts = []  # constants of anonymous enums, in order
        self.const_enum = {}   # constant -> enum name, or None (anonymous)
        self.anon_names = {}   # (realfile, line, col) -> name for unnamed types
        self.anon_names_lc = {}  # (line, col) -> name, fallback

    def norm(self, t):
        def sub(m):
            f, l, c = m.group(1), int(m.group(2)), int(m.group(3))
            key = (os.path.realpath(f), l, c)
            if key in self.anon_names:
                return self.anon_names[key]
            names = self.anon_names_lc.get((l, c))
            if names and len(names) == 1:
                return names[0]
            return "(anonymous)"
        return _ANON_RE.sub(sub, t)


def clang_ast(include_dir, headers, cc, cflags, tmp):
    tu = os.path.join(tmp, "abi_tu.c")
    with open(tu, "w") as f:
        for h in headers:
            f.write(f'#include "{h}"\n')
    cmd = [cc, "-x", "c", "-std=c11", "-D_GNU_SOURCE", "-I", include_dir] + cflags + \
          ["-fsyntax-only", "-Wno-everything", "-Xclang", "-ast-dump=json", tu]
    out = run(cmd, "clang AST dump of the public headers")
    try:
        return json.loads(out)
    except ValueError as e:
        raise ToolError(f"cannot parse clang's JSON AST: {e}")


def first_decl_ref(node, kinds):
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k in ("ownedTagDecl", "decl"):
                d = x.get(k)
                if isinstance(d, dict) and d.get("kind") in kinds:
                    return d["id"]
            stack.extend(reversed(x.get("inner", [])))
    return None


_TAG_TYPE_RE = re.compile(r"^(struct|union|enum) (\S+|\(.*\))$")


def build_model(ast, include_dir):
    LocTracker().walk(ast)
    root = os.path.realpath(os.path.join(include_dir, "tcomms")) + os.sep
    real_cache = {}

    def inside(node):
        w = node.get("_where")
        if not w or not w[0]:
            return False
        f = w[0]
        if f not in real_cache:
            real_cache[f] = os.path.realpath(f).startswith(root)
        return real_cache[f]

    m = Model()
    top = [n for n in ast.get("inner", []) if inside(n) and not n.get("isImplicit")]

    # typedef names of tag types (for anonymous ones, their only name)
    tag_typedef = {}
    for n in top:
        if n["kind"] == "TypedefDecl" and _TAG_TYPE_RE.match(n["type"]["qualType"]):
            ref = first_decl_ref(n, ("RecordDecl", "EnumDecl"))
            if ref and ref not in tag_typedef:
                tag_typedef[ref] = n["name"]

    def remember_anon(node, name):
        w = node.get("_where")
        if w and w[0]:
            m.anon_names[(os.path.realpath(w[0]), w[1], w[2])] = name
            m.anon_names_lc.setdefault((w[1], w[2]), []).append(name)

    def anon_ref(qual):
        """(file, line, col) of the unnamed type a field's type names, if any."""
        mm = _ANON_RE.search(qual)
        if not mm:
            return None
        return (os.path.realpath(mm.group(1)), int(mm.group(2)), int(mm.group(3)))

    def where_key(node):
        w = node.get("_where")
        return (os.path.realpath(w[0]), w[1], w[2]) if w and w[0] else None

    def do_enum(node, name, texpr):
        consts = [c["name"] for c in node.get("inner", []) if c.get("kind") == "EnumConstantDecl"]
        if name is None:
            m.anon_consts.extend(consts)
            for c in consts:
                m.const_enum[c] = None
            return
        if name in m.enums:
            return
        m.enums[name] = {"texpr": texpr, "consts": consts}
        for c in consts:
            m.const_enum[c] = name

    def do_record(node, name, texpr, into=None, anon_note=""):
        """Record the struct/union `node`. `into`: the record whose field list
        receives the members (an anonymous member's enclosing record)."""
        if into is None:
            if name in m.records:
                return
            into = {"kind": node.get("tagUsed", "struct"), "texpr": texpr, "fields": []}
            m.records[name] = into
        pending = {}  # where -> nested unnamed RecordDecl/EnumDecl
        anon_count = 0
        for ch in node.get("inner", []):
            k = ch.get("kind")
            if k in ("RecordDecl", "EnumDecl") and ch.get("name"):
                # a tagged type declared inside a struct has file scope in C
                do_toplevel(ch)
                continue
            if k in ("RecordDecl", "EnumDecl"):
                pending[where_key(ch)] = ch
                continue
            if k != "FieldDecl":
                continue
            qual = ch["type"]["qualType"]
            ref = anon_ref(qual)
            nested = pending.get(ref) if ref else None
            if nested is None and ref and len(pending) == 1:
                nested = next(iter(pending.values()))  # macro-expanded location
            fname = ch.get("name")
            if not fname:
                # C11 anonymous struct/union member: its members are named as
                # members of the enclosing record
                if nested is not None and nested["kind"] == "RecordDecl":
                    anon_count += 1
                    sub = f"{name}.(anonymous {nested.get('tagUsed', 'struct')} {anon_count})"
                    remember_anon(nested, f"{nested.get('tagUsed', 'struct')} {sub}")
                    do_record(nested, name, texpr, into,
                              f" (in anonymous {nested.get('tagUsed', 'struct')})")
                continue
            if nested is not None:
                path = f"{name}.{fname}"
                dims = len(re.findall(r"\[\d*\]", qual[qual.rfind(")"):]))
                sub_texpr = f"__typeof__(((({texpr} *)0)->{fname}){'[0]' * dims})" \
                    if texpr else None
                if nested["kind"] == "RecordDecl":
                    tag = nested.get("tagUsed", "struct")
                    remember_anon(nested, f"{tag} {path}")
                    do_record(nested, path, sub_texpr)
                else:
                    remember_anon(nested, f"enum {path}")
                    do_enum(nested, path, sub_texpr)
            f = {"name": fname, "qual": qual, "note": anon_note}
            if ch.get("isBitfield"):
                width = None
                for c in ch.get("inner", []):
                    if "value" in c:
                        width = c["value"]
                        break
                f["bitfield"] = width if width is not None else "?"
            f["flexible"] = qual.endswith("[]")
            into["fields"].append(f)

    def do_toplevel(n):
        k = n["kind"]
        if k == "FunctionDecl":
            proto = n["type"]["qualType"]
            if n.get("storageClass") == "static":
                m.inlines.setdefault(n["name"], proto)
            else:
                m.funcs.setdefault(n["name"], proto)
        elif k == "VarDecl":
            static = "static " if n.get("storageClass") == "static" else ""
            m.vars.setdefault(n["name"], static + n["type"]["qualType"])
        elif k == "TypedefDecl":
            m.typedefs.setdefault(n["name"], n["type"]["qualType"])
        elif k == "RecordDecl":
            if not n.get("completeDefinition"):
                return
            tag = n.get("tagUsed", "struct")
            if n.get("name"):
                do_record(n, n["name"], f"{tag} {n['name']}")
            elif n["id"] in tag_typedef:
                td = tag_typedef[n["id"]]
                remember_anon(n, f"{tag} {td}")
                do_record(n, td, td)
        elif k == "EnumDecl":
            if "inner" not in n:  # a forward reference
                return
            if n.get("name"):
                do_enum(n, n["name"], f"enum {n['name']}")
            elif n["id"] in tag_typedef:
                td = tag_typedef[n["id"]]
                remember_anon(n, f"enum {td}")
                do_enum(n, td, td)
            else:
                do_enum(n, None, None)

    for n in top:
        do_toplevel(n)
    return m


# ---------------------------------------------------------------------------
# probe program: sizes, offsets, enum values, version
# ---------------------------------------------------------------------------

def probe(m, include_dir, headers, cc, cflags, tmp):
    exprs = []   # unsigned compile-time expressions, in order

    def q(e):
        exprs.append(e)
        return len(exprs) - 1

    plan_rec = {}
    for name, r in m.records.items():
        t = r["texpr"]
        if not t:
            continue
        p = {"size": q(f"sizeof({t})"), "align": q(f"_Alignof({t})"), "fields": []}
        for f in r["fields"]:
            if "bitfield" in f:
                p["fields"].append(None)
                continue
            off = q(f"offsetof({t}, {f['name']})")
            size = None if f["flexible"] else q(f"sizeof(((({t} *)0)->{f['name']}))")
            p["fields"].append((off, size))
        plan_rec[name] = p
    plan_enum = {}
    for name, e in m.enums.items():
        if e["texpr"]:
            plan_enum[name] = (q(f"sizeof({e['texpr']})"), q(f"_Alignof({e['texpr']})"))
    consts = sorted(m.const_enum)

    src = ["/* generated by tools/abi/abi_dump.py */", "#include <stddef.h>", "#include <stdio.h>"]
    src += [f'#include "{h}"' for h in headers]
    src.append("static const unsigned long long abi_u[] = {")
    src += [f"    (unsigned long long)({e})," for e in exprs] or ["    0,"]
    src.append("};")
    src.append("static const struct { long long s; unsigned long long u; int neg; } abi_c[] = {")
    src += [f"    {{(long long)({c}), (unsigned long long)({c}), ({c}) < 0}}," for c in consts] \
        or ["    {0, 0, 0},"]
    src.append("};")
    src += [
        "int main(void)",
        "{",
        f"    for (size_t i = 0; i < {len(exprs)}; i++) printf(\"u %llu\\n\", abi_u[i]);",
        f"    for (size_t i = 0; i < {len(consts)}; i++) {{",
        "        if (abi_c[i].neg) printf(\"c %lld\\n\", abi_c[i].s);",
        "        else printf(\"c %llu\\n\", abi_c[i].u);",
        "    }",
        "#if defined(TC_VERSION_MAJOR) && defined(TC_VERSION_MINOR) && defined(TC_VERSION_PATCH)",
        "    printf(\"v %lld.%lld.%lld\\n\", (long long)TC_VERSION_MAJOR,",
        "           (long long)TC_VERSION_MINOR, (long long)TC_VERSION_PATCH);",
        "#ifdef TC_VERSION",
        "    printf(\"w %lld\\n\", (long long)TC_VERSION);",
        "#endif",
        "#elif defined(TC_VERSION)",
        "    printf(\"v %lld.%lld.%lld\\n\", (long long)TC_VERSION / 10000,",
        "           (long long)TC_VERSION / 100 % 100, (long long)TC_VERSION % 100);",
        "#else",
        "    printf(\"v unknown\\n\");",
        "#endif",
        "    return 0;",
        "}",
    ]
    c_file = os.path.join(tmp, "abi_probe.c")
    exe = os.path.join(tmp, "abi_probe")
    with open(c_file, "w") as f:
        f.write("\n".join(src) + "\n")
    run([cc, "-std=c11", "-D_GNU_SOURCE", "-w", "-O0", "-I", include_dir] + cflags +
        ["-o", exe, c_file], "compiling the ABI probe program " + c_file)
    out = run([exe], "running the ABI probe program").decode().split("\n")
    us = [int(l[2:]) for l in out if l.startswith("u ")]
    cs = [int(l[2:]) for l in out if l.startswith("c ")]
    vs = [l[2:] for l in out if l.startswith("v ")]
    ws = [int(l[2:]) for l in out if l.startswith("w ")]
    if len(us) != len(exprs) or len(cs) != len(consts) or len(vs) != 1:
        raise ToolError("the ABI probe program printed an unexpected output")
    return {
        "u": us, "rec": plan_rec, "enum": plan_enum,
        "consts": dict(zip(consts, cs)), "version": vs[0],
        "tc_version": ws[0] if ws else None,
    }


# ---------------------------------------------------------------------------
# library: symbols and SONAME
# ---------------------------------------------------------------------------

def lib_info(lib):
    if not os.path.isfile(lib):
        raise ToolError(f"no library {lib}")
    out = run(["nm", "-D", "--defined-only", "-S", lib], "nm -D").decode()
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        name, typ = parts[-1], parts[-2]
        size = int(parts[1], 16) if len(parts) >= 4 else None
        if typ in ("A", "a") or name in LINKER_SYMBOLS:
            continue  # version nodes and linker-generated symbols
        if typ in NM_FUNC:
            syms[name] = "func"
        elif typ in NM_OBJECT:
            syms[name] = f"object size {size}" if size is not None else "object"
        else:
            syms[name] = f"other {typ}"
    out = run(["readelf", "-d", lib], "readelf -d").decode()
    mm = re.search(r"Library soname: \[([^\]]*)\]", out)
    return syms, (mm.group(1) if mm else "none")


# ---------------------------------------------------------------------------
# the record
# ---------------------------------------------------------------------------

def make_record(m, pr, syms, soname):
    u = pr["u"]
    lines = [f"version: {pr['version']}", f"soname: {soname}"]
    lines += [f"func {n}: {m.norm(p)}" for n, p in sorted(m.funcs.items())]
    lines += [f"inline {n}: {m.norm(p)}" for n, p in sorted(m.inlines.items())]
    lines += [f"var {n}: {m.norm(t)}" for n, t in sorted(m.vars.items())]
    lines += [f"typedef {n}: {m.norm(t)}" for n, t in sorted(m.typedefs.items())]
    for name in sorted(m.records):
        r = m.records[name]
        p = pr["rec"].get(name)
        if p:
            lines.append(f"{r['kind']} {name}: size {u[p['size']]} align {u[p['align']]}")
        else:
            lines.append(f"{r['kind']} {name}: size unknown")
        for i, f in enumerate(r["fields"]):
            t = m.norm(f["qual"])
            if "bitfield" in f:
                lines.append(f"field {name}.{f['name']}: bitfield {f['bitfield']} type {t}{f['note']}")
                continue
            if not p:
                lines.append(f"field {name}.{f['name']}: type {t}{f['note']}")
                continue
            off, size = p["fields"][i]
            sz = "flexible" if size is None else u[size]
            lines.append(f"field {name}.{f['name']}: offset {u[off]} size {sz} type {t}{f['note']}")
    for name in sorted(m.enums):
        e = m.enums[name]
        if name in pr["enum"]:
            s, a = pr["enum"][name]
            lines.append(f"enum {name}: size {u[s]} align {u[a]}")
        for c in e["consts"]:
            lines.append(f"const {c}: {pr['consts'][c]} in enum {name}")
    for c in m.anon_consts:
        lines.append(f"const {c}: {pr['consts'][c]} in anonymous enum")
    for n in sorted(syms):
        lines.append(f"symbol {n}: {syms[n]}")
    return lines


def header_comment():
    return [
        f"# tcomms public ABI record, format {FORMAT_VERSION}: written by tools/abi/abi_dump.py,",
        "# compared by tools/abi/abi_check.py (see tools/abi/README.md). Do not edit by hand.",
    ]


def dump(include_dir, lib, cc="clang", probe_cc="gcc", cflags=(), keep_temp=False):
    """Returns (record lines, model, probe results, symbols)."""
    include_dir = os.path.abspath(include_dir)
    cflags = list(cflags)
    headers = public_headers(include_dir)
    tmp = tempfile.mkdtemp(prefix="tc_abi_")
    try:
        ast = clang_ast(include_dir, headers, cc, cflags, tmp)
        m = build_model(ast, include_dir)
        del ast
        pr = probe(m, include_dir, headers, probe_cc, cflags, tmp)
        syms, soname = lib_info(lib)
    finally:
        if keep_temp:
            print(f"abi: temporary files kept in {tmp}", file=sys.stderr)
        else:
            for f in os.listdir(tmp):
                os.unlink(os.path.join(tmp, f))
            os.rmdir(tmp)
    lines = make_record(m, pr, syms, soname)
    keys = [line_key(l) for l in lines]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise ToolError("two record lines share a key: " + ", ".join(dup))
    return lines, m, pr, syms


def split_line(line):
    """`KIND NAME: VALUE` -> ("KIND NAME", "VALUE")."""
    head, sep, value = line.partition(": ")
    if not sep:
        return line.rstrip(":"), ""
    return head, value


def line_key(line):
    return split_line(line)[0]


def parse_record(text):
    """Record text -> {key: value}, in file order."""
    rec = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, value = split_line(line)
        rec[key] = value
    return rec


def add_common_args(ap):
    ap.add_argument("--include", required=True, metavar="DIR",
                    help="include folder holding tcomms/ (the installed headers)")
    ap.add_argument("--lib", required=True, metavar="LIB.so", help="the shared library")
    ap.add_argument("--cc", default="clang", help="clang, for the AST (default: clang)")
    ap.add_argument("--probe-cc", default="gcc",
                    help="compiler of the probe program (default: gcc)")
    ap.add_argument("--cflags", default="",
                    help="extra compiler flags for both, e.g. -I/usr/lib/x86_64-linux-gnu/pmix2/include")
    ap.add_argument("--keep-temp", action="store_true",
                    help="keep the generated translation unit and probe program")


def parse_args(ap, argv=None):
    """argparse, with `--cflags -I...` accepted as `--cflags=-I...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    out = []
    i = 0
    while i < len(argv):
        if argv[i] == "--cflags" and i + 1 < len(argv):
            out.append("--cflags=" + argv[i + 1])
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return ap.parse_args(out)


def main():
    ap = argparse.ArgumentParser(description="Print the public ABI record of tcomms.")
    add_common_args(ap)
    a = parse_args(ap)
    sys.setrecursionlimit(10000)
    try:
        lines, _, _, _ = dump(a.include, a.lib, a.cc, a.probe_cc, shlex.split(a.cflags),
                              a.keep_temp)
    except ToolError as e:
        print(f"abi_dump: {e}", file=sys.stderr)
        return 3
    sys.stdout.write("\n".join(header_comment() + lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
