"""The wheel python/build_wheel.py makes, as pip installed it (python/run_tests.sh installs it
and names it in TCOMMS_TEST_WHEEL): its metadata and version, every file against RECORD's hash,
and torch finding the "tcomms" backend by its entry point, with no import of tcomms.torch."""
import base64
import hashlib
import importlib.metadata as md
import os
import subprocess
import sys
import zipfile

import pytest

import tcomms

WHEEL = os.environ.get("TCOMMS_TEST_WHEEL")
pytestmark = pytest.mark.skipif(not WHEEL, reason="python/run_tests.sh installs the wheel")


def test_version_and_tag():
    v = md.version("tcomms")
    major, minor, patch = (int(p) for p in v.split("."))
    assert tcomms.version() == major * 10000 + minor * 100 + patch  # the C API's TC_VERSION
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert os.path.basename(WHEEL) == f"tcomms-{v}-{py}-{py}-linux_x86_64.whl"
    # the package imported is the one pip installed, not a source tree's
    assert os.path.dirname(tcomms.__file__) == str(md.distribution("tcomms").locate_file("tcomms"))


def test_refused_for_another_python(tmp_path, monkeypatch):
    """The tag is the running interpreter's: build_wheel refuses one whose headers are not the
    build's (the wheel would install and fail at import)."""
    here = os.path.dirname(os.path.abspath(__file__))  # python/tests/local
    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(here)))  # python/
    import build_wheel
    assert build_wheel.python_of_build() == f"{sys.version_info.major}.{sys.version_info.minor}"
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "BUILD.bazel").write_text('copts = ["-isystem/usr/include/python3.99"]')
    monkeypatch.setattr(build_wheel, "ROOT", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["build_wheel.py", "--ext", WHEEL, "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="built for Python 3.99; run this with it, not "):
        build_wheel.main()
    assert not list(tmp_path.glob("*.whl"))


def test_files_match_record():
    dist = md.distribution("tcomms")
    files = [f for f in dist.files if f.hash]
    names = {str(f) for f in files}
    assert {"tcomms/_ext.so", "tcomms/torch.py", "tcomms/__init__.py"} <= names
    with zipfile.ZipFile(WHEEL) as z:  # everything the wheel holds was installed and recorded
        held = {n for n in z.namelist() if not n.endswith("/RECORD")}
    info = f"tcomms-{dist.version}.dist-info/"
    assert held <= names
    assert names - held <= {info + n for n in ("INSTALLER", "REQUESTED", "direct_url.json")}
    for f in files:
        data = f.locate().read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert (f.hash.mode, f.hash.value, f.size) == ("sha256", digest, len(data)), str(f)


def test_torch_finds_the_backend_by_its_entry_point():
    eps = [e for e in md.entry_points(group="torch.distributed.backends") if e.name == "tcomms"]
    assert [e.value for e in eps] == ["tcomms.torch:register"]
    pytest.importorskip("torch")
    script = (
        "import sys, datetime, torch, torch.distributed as dist\n"
        "assert 'tcomms' not in sys.modules\n"
        "dist.init_process_group('tcomms', store=dist.HashStore(), rank=0, world_size=1,\n"
        "                        timeout=datetime.timedelta(seconds=30))\n"
        "x = torch.arange(4.0)\n"
        "dist.all_reduce(x)\n"
        "g = dist.new_group([0], backend='tcomms')\n"
        "dist.all_reduce(x, group=g)\n"
        "print(dist.get_backend(), x.tolist())\n"
        "dist.destroy_process_group()\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "tcomms [0.0, 1.0, 2.0, 3.0]"
