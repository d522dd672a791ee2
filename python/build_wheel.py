"""Makes the wheel of the tcomms Python package from what the build made, with the standard
library only (the build runs offline): python/tcomms/*.py, the extension module Bazel linked
(//python:_ext.so) and the metadata pip reads, RECORD's hashes included.

    python3 python/build_wheel.py --ext EXT_SO --out DIR      (prints the wheel's path)

python/run_tests.sh builds the extension and calls this. Run it with the interpreter the
extension was built for (the Python whose headers python/BUILD.bazel names, Debian's 3.11): the
wheel's tag (cp311-cp311-linux_x86_64) is that interpreter's, and another one is refused. The wheel names the entry point
torch.distributed.backends, so that torch finds the "tcomms" backend by its name without an
import of tcomms.torch. The extension links the libraries of Debian's libpmix2, libhwloc15 and
libsodium23 dynamically: the wheel installs where those are (not a manylinux wheel).
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY_POINTS = "[torch.distributed.backends]\ntcomms = tcomms.torch:register\n"


def version():
    """MAJOR.MINOR.PATCH of the C API's header, as tools/install.sh reads it."""
    with open(os.path.join(ROOT, "api/include/tcomms/tcomms.h")) as f:
        text = f.read()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define TC_VERSION_{part} (\d+)$", text, re.M)
        if not m:
            sys.exit(f"build_wheel: no TC_VERSION_{part} in api/include/tcomms/tcomms.h")
        parts.append(m.group(1))
    return ".".join(parts)


def python_of_build():
    """"3.11": the Python whose headers python/BUILD.bazel compiles the extension against."""
    with open(os.path.join(ROOT, "python/BUILD.bazel")) as f:
        m = re.search(r"-isystem/usr/include/python(\d+\.\d+)", f.read())
    if not m:
        sys.exit("build_wheel: python/BUILD.bazel names no Python headers (-isystem)")
    return m.group(1)


def tag():
    """python, ABI and platform tag of this interpreter, e.g. cp311-cp311-linux_x86_64."""
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}-{plat}"


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def files(ext, ver, wheel_tag):
    """(name in the wheel, bytes, mode) of every file but RECORD."""
    pkg = os.path.join(ROOT, "python/tcomms")
    out = []
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                out.append((f"tcomms/{name}", f.read(), 0o644))
    with open(ext, "rb") as f:
        out.append(("tcomms/_ext.so", f.read(), 0o755))
    info = f"tcomms-{ver}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: tcomms\nVersion: {ver}\n"
                "Summary: collective communication for distributed training: a torchcomms-shaped "
                "API and the \"tcomms\" torch.distributed backend\n"
                f"Requires-Python: =={sys.version_info.major}.{sys.version_info.minor}.*\n"
                "\n"
                "Needs Debian's libpmix2, libhwloc15 and libsodium23. NumPy arrays and torch CPU "
                "tensors are the buffers (neither is required to import the package).\n")
    wheel = (f"Wheel-Version: 1.0\nGenerator: tcomms python/build_wheel.py\n"
             f"Root-Is-Purelib: false\nTag: {wheel_tag}\n")
    out += [(f"{info}/METADATA", metadata.encode(), 0o644),
            (f"{info}/WHEEL", wheel.encode(), 0o644),
            (f"{info}/entry_points.txt", ENTRY_POINTS.encode(), 0o644),
            (f"{info}/top_level.txt", b"tcomms\n", 0o644)]
    return out, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ext", required=True, help="the extension module (_ext.so) Bazel built")
    ap.add_argument("--out", required=True, help="the folder the wheel goes to")
    a = ap.parse_args()
    built, running = python_of_build(), f"{sys.version_info.major}.{sys.version_info.minor}"
    if built != running:  # the tag would promise an ABI the extension does not have
        sys.exit(f"build_wheel: the extension is built for Python {built}; run this with it, "
                 f"not {running}")
    ver, wheel_tag = version(), tag()
    entries, info = files(a.ext, ver, wheel_tag)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"tcomms-{ver}-{wheel_tag}.whl")
    record = [record_line(name, data) for name, data, _ in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in entries:
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    print(path)


if __name__ == "__main__":
    main()
