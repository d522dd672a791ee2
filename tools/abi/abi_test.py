#!/usr/bin/env python3
"""Self-test of abi_dump.py and abi_check.py on a small made-up header tree
and library (no Bazel, no tcomms build): needs python3, clang, gcc, nm,
readelf. Run: tools/abi/abi_test.py (prints "abi_test: ok", exit 0).

Covers the AST shapes of the real headers and a few more (typedef of an
anonymous struct and enum, nested unnamed struct fields, arrays of them, an
anonymous union member, bitfields, a flexible array, function pointer fields,
const pointers, enums as field types, a declaration made by a macro, a
variadic function, static inline functions), and every exit status.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DUMP = os.path.join(HERE, "abi_dump.py")
CHECK = os.path.join(HERE, "abi_check.py")

TCOMMS_H = """\
#ifndef TCOMMS_TCOMMS_H
#define TCOMMS_TCOMMS_H
#include <stddef.h>
#include <stdint.h>
#include "tcomms/base/status.h"
#define TC_VERSION_MAJOR 0
#define TC_VERSION_MINOR 1
#define TC_VERSION_PATCH 0
#define TC_VERSION (TC_VERSION_MAJOR * 10000 + TC_VERSION_MINOR * 100 + TC_VERSION_PATCH)
typedef struct tc_comm tc_comm_t;
typedef enum tc_bootstrap { TC_BOOTSTRAP_AUTO = 0, TC_BOOTSTRAP_PMIX, TC_BOOTSTRAP_SELF } tc_bootstrap_t;
typedef struct tc_comm_opts {
    uint32_t size;
    tc_bootstrap_t bootstrap;
    const char *name;
    const char *hints;
    int64_t timeout_ms;
    int device;
} tc_comm_opts_t;
typedef void (*tc_hook_fn)(tc_comm_t *comm, int after, void *arg);
tc_status_t tc_comm_create(const tc_comm_opts_t *opts, tc_comm_t **comm_p);
tc_status_t tc_comm_destroy(tc_comm_t *comm);
int tc_version(void);
#endif
"""

STATUS_H = """\
#ifndef TCOMMS_BASE_STATUS_H
#define TCOMMS_BASE_STATUS_H
typedef enum tc_status { TC_OK = 0, TC_INPROGRESS = 1, TC_ERR_TIMEOUT = -40 } tc_status_t;
const char *tc_status_str(tc_status_t s);
#endif
"""

SHAPES_H = """\
#ifndef TCOMMS_BASE_SHAPES_H
#define TCOMMS_BASE_SHAPES_H
#include <stdarg.h>
#include <stdint.h>
#include "tcomms/base/status.h"
#define TC_DECLARE(n) int n(int)
typedef struct { int a; const char *const *names; } tc_anon_t;
typedef enum { TC_AE_A = 1, TC_AE_B = -3 } tc_anon_enum_t;
struct tc_outer {
    struct { int x; double y; } pt;
    union { uint32_t u; float f; };
    struct tc_inner { char c[3][5]; } in;
    enum { TC_K_ONE = 1, TC_K_TWO } kind;
    unsigned flag : 3;
    tc_status_t (*cb)(const struct tc_outer *, void *const);
    struct { short s; } arr[4];
    tc_anon_enum_t e;
    char tail[];
};
enum { TC_FREE = 7 };
TC_DECLARE(tc_macro_fn);
int tc_log_fmt(const char *fmt, ...);
extern const struct tc_outer tc_outer_default;
static inline int tc_twice(int x) { return 2 * x; }
#endif
"""

LIB_C = """\
#include "tcomms/tcomms.h"
#include "tcomms/base/shapes.h"
tc_status_t tc_comm_create(const tc_comm_opts_t *o, tc_comm_t **c) { (void)o; *c = 0; return TC_OK; }
tc_status_t tc_comm_destroy(tc_comm_t *c) { (void)c; return TC_OK; }
int tc_version(void) { return TC_VERSION; }
const char *tc_status_str(tc_status_t s) { (void)s; return ""; }
int tc_macro_fn(int x) { return x; }
int tc_log_fmt(const char *fmt, ...) { (void)fmt; return 0; }
const struct tc_outer tc_outer_default;
"""

failures = []


def sh(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


class Tree:
    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        self.inc = os.path.join(self.dir, "include")
        for rel, text in (("tcomms/tcomms.h", TCOMMS_H), ("tcomms/base/status.h", STATUS_H),
                          ("tcomms/base/shapes.h", SHAPES_H)):
            self.write(rel, text)

    def write(self, rel, text):
        p = os.path.join(self.inc, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)

    def edit(self, rel, old, new):
        p = os.path.join(self.inc, rel)
        with open(p) as f:
            text = f.read()
        assert old in text, (rel, old)
        with open(p, "w") as f:
            f.write(text.replace(old, new, 1))

    def lib(self, soname="libtcomms.so.0", extra_c=""):
        src = os.path.join(self.dir, "lib.c")
        with open(src, "w") as f:
            f.write(LIB_C + extra_c)
        out = os.path.join(self.dir, soname)
        r = sh(["gcc", "-shared", "-fPIC", "-std=c11", "-I", self.inc, "-o", out,
                f"-Wl,-soname,{soname}", src])
        assert r.returncode == 0, r.stdout
        return out


def expect(name, cmd, rc, *needles):
    r = sh(cmd)
    bad = [n for n in needles if n not in r.stdout]
    if r.returncode != rc or bad:
        failures.append(name)
        print(f"FAIL {name}: exit {r.returncode} (want {rc}); missing {bad}\n{r.stdout}")
    else:
        print(f"ok   {name}")
    return r.stdout


def main():
    root = tempfile.mkdtemp(prefix="tc_abi_test_")
    try:
        base = Tree(root, "base")
        lib = base.lib()
        record = os.path.join(root, "tcomms.abi")
        r = sh([DUMP, "--include", base.inc, "--lib", lib])
        assert r.returncode == 0, r.stdout
        text = r.stdout
        for line in [
            "version: 0.1.0",
            "soname: libtcomms.so.0",
            "func tc_comm_create: tc_status_t (const tc_comm_opts_t *, tc_comm_t **)",
            "func tc_macro_fn: int (int)",
            "func tc_log_fmt: int (const char *, ...)",
            "inline tc_twice: int (int)",
            "var tc_outer_default: const struct tc_outer",
            "typedef tc_hook_fn: void (*)(tc_comm_t *, int, void *)",
            "typedef tc_anon_t: struct tc_anon_t",
            "struct tc_comm_opts: size 40 align 8",
            "field tc_comm_opts.timeout_ms: offset 24 size 8 type int64_t",
            "field tc_comm_opts.bootstrap: offset 4 size 4 type tc_bootstrap_t",
            "struct tc_anon_t: size 16 align 8",
            "field tc_anon_t.names: offset 8 size 8 type const char *const *",
            "field tc_outer.pt: offset 0 size 16 type struct tc_outer.pt",
            "struct tc_outer.pt: size 16 align 8",
            "field tc_outer.pt.y: offset 8 size 8 type double",
            "field tc_outer.u: offset 16 size 4 type uint32_t (in anonymous union)",
            "field tc_outer.in: offset 20 size 15 type struct tc_inner",
            "field tc_inner.c: offset 0 size 15 type char[3][5]",
            "field tc_outer.kind: offset 36 size 4 type enum tc_outer.kind",
            "field tc_outer.flag: bitfield 3 type unsigned int",
            "field tc_outer.cb: offset 48 size 8 type tc_status_t (*)(const struct tc_outer *, void *const)",
            "field tc_outer.arr: offset 56 size 8 type struct tc_outer.arr[4]",
            "struct tc_outer.arr: size 2 align 2",
            "field tc_outer.tail: offset 68 size flexible type char[]",
            "enum tc_anon_enum_t: size 4 align 4",
            "const TC_AE_B: -3 in enum tc_anon_enum_t",
            "const TC_K_TWO: 2 in enum tc_outer.kind",
            "const TC_FREE: 7 in anonymous enum",
            "const TC_ERR_TIMEOUT: -40 in enum tc_status",
            "symbol tc_comm_create: func",
            "symbol tc_outer_default: object size 72",
        ]:
            if line + "\n" not in text:
                failures.append(f"dump line {line!r}")
                print(f"FAIL dump: no line {line!r}")
        if not any(f.startswith("dump") for f in failures):
            print("ok   dump")
        # deterministic, and independent of where DIR is
        other = Tree(root, "elsewhere")
        r2 = sh([DUMP, "--include", other.inc, "--lib", lib])
        if r2.stdout != text:
            failures.append("deterministic")
            print("FAIL deterministic: the dump depends on DIR")
        else:
            print("ok   deterministic")

        args = lambda t, l: ["--record", record, "--include", t.inc, "--lib", l]  # noqa: E731
        expect("update", [CHECK, "--update"] + args(base, lib), 0, "wrote")
        expect("match", [CHECK] + args(base, lib), 0, "abi: matches the record (6 functions, 10 types, 7 symbols)")

        t = Tree(root, "insert")
        t.edit("tcomms/tcomms.h", "    const char *hints;\n", "    const char *hints;\n    int flags;\n")
        expect("field inserted", [CHECK] + args(t, lib), 2,
               "struct tc_comm_opts: size 40 -> 48 (used by: tc_comm_create)",
               "field tc_comm_opts.timeout_ms: offset 24 -> 32",
               "field tc_comm_opts.device: offset 32 -> 40",
               "abi: added: field tc_comm_opts.flags: offset 24 size 4 type int",
               "abi: INCOMPATIBLE change")
        t.edit("tcomms/tcomms.h", "#define TC_VERSION_MAJOR 0", "#define TC_VERSION_MAJOR 1")
        expect("major bump", [CHECK] + args(t, t.lib("libtcomms.so.1")), 1,
               "soname: libtcomms.so.0 -> libtcomms.so.1",
               "allowed by the major version bump 0.1.0 -> 1.1.0")

        t = Tree(root, "additions")
        t.edit("tcomms/base/status.h", "TC_ERR_TIMEOUT = -40 }", "TC_ERR_TIMEOUT = -40, TC_ERR_NEW = -41 }")
        t.write("tcomms/base/extra.h", "typedef struct tc_new { int a; void *b; } tc_new_t;\n")
        expect("additions", [CHECK] + args(t, lib), 1,
               "added: enum constant TC_ERR_NEW: -41 in enum tc_status",
               "added: struct tc_new: size 16 align 8",
               "abi: compatible additions; update the record:")

        t = Tree(root, "changes")
        t.edit("tcomms/tcomms.h", "tc_status_t tc_comm_destroy(tc_comm_t *comm);",
               "tc_status_t tc_comm_destroy(tc_comm_t *comm, int flags);")
        t.edit("tcomms/tcomms.h", "TC_BOOTSTRAP_PMIX,", "TC_BOOTSTRAP_PMIX = 4,")
        t.edit("tcomms/tcomms.h", "    int device;\n", "    long device;\n")
        expect("changes", [CHECK] + args(t, lib), 2,
               "function tc_comm_destroy: prototype tc_status_t (tc_comm_t *) -> "
               "tc_status_t (tc_comm_t *, int)",
               "enum constant TC_BOOTSTRAP_PMIX: value 1 -> 4",
               "field tc_comm_opts.device: size 4 -> 8, type int -> long",
               "abi: INCOMPATIBLE change")

        t = Tree(root, "unexported")
        t.edit("tcomms/tcomms.h", "int tc_version(void);", "int tc_version(void);\nint tc_gone(void);")
        expect("declared, not exported", [CHECK] + args(t, lib), 2,
               "function tc_gone is declared in the public headers but")

        t = Tree(root, "symbols")
        expect("symbol not tc_",
               [CHECK] + args(t, t.lib(extra_c="int helper(void) { return 1; }\n")), 2,
               "exports helper, which does not start with tc_")
        t2 = Tree(root, "symbols2")
        lib2 = t2.lib(extra_c="int tc_internal(void) { return 1; }\n")
        expect("symbol added", [CHECK] + args(t2, lib2), 1, "added: symbol tc_internal: func")
        expect("update again", [CHECK, "--update"] + args(t2, lib2), 0, "wrote")
        expect("symbol removed", [CHECK] + args(base, lib), 2,
               "symbol tc_internal removed (was: func)")
        expect("update back", [CHECK, "--update"] + args(base, lib), 0, "wrote")

        t = Tree(root, "version")
        t.edit("tcomms/tcomms.h", "#define TC_VERSION_PATCH 0", "#define TC_VERSION_PATCH 1")
        expect("version changed", [CHECK] + args(t, lib), 1, "version 0.1.0 -> 0.1.1")
        t.edit("tcomms/tcomms.h", "#define TC_VERSION (", "#define TC_VERSION 5 // (")
        expect("TC_VERSION disagrees", [CHECK] + args(t, lib), 2, "TC_VERSION is 5 but")

        t = Tree(root, "broken")
        t.write("tcomms/base/broken.h", "int tc_broken(\n")
        expect("header does not compile", [CHECK] + args(t, lib), 3)
    finally:
        shutil.rmtree(root)
    if failures:
        print(f"abi_test: {len(failures)} failed: {', '.join(failures)}")
        return 1
    print("abi_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
