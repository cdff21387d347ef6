#!/usr/bin/env python3
"""Python's startup snapshot saved in the code cache (docs/python.md, "The startup
snapshot"), on a copy of the standard library so that the test may edit it.

`peri python` with a fresh cache directory boots CPython and leaves a snapshot file
(magic PERISNAP). Then, each in a new process:
  - a warm run uses it (same inode, its last-use time touched) and prints what a run
    with the cache off prints;
  - after a module the boot imports (json) is edited in the library, the next run
    imports the edited module (the saved snapshot no longer matches the library) and
    the run after it uses a new snapshot; the same when the edit keeps the file's size
    and puts its modification time back;
  - a file the run is given where the boot would look first (a zip archive at
    /usr/local/lib/python311.zip, first on sys.path) is not imported by the boot,
    neither in a cold process nor in later runs of one process (--repeat): the boot
    sees none of the run's files, so nothing a run was given is frozen into the
    snapshot other runs start from.

usage: snapshot_file_test.py PERI PYTHON_DIR
Exit 77 (skip) when CPython's WASI build is missing, unless CI=true.
"""
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from snapfiles import snapshots  # noqa: E402

PERI, PYDIR = sys.argv[1], sys.argv[2]
PROBE = b"import json\nprint(getattr(json, 'PERI_MARK', 0), json.dumps([1, 2]))\n"


def run(pydir, cache, script, extra=()):
    env = dict(os.environ, PERI_CODE_CACHE=cache)
    env.pop("PERI_ENGINE", None)
    p = subprocess.run([PERI, "python", "--python-dir", pydir, *extra, "-"], input=script,
                       env=env, capture_output=True, timeout=600)
    err = b"".join(l for l in p.stderr.splitlines(True) if not l.startswith(b"peri python: starting"))
    return p.stdout, err, p.returncode


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def main():
    if not os.path.isfile(os.path.join(PYDIR, "python.wasm")):
        print("CPython's WASI build is missing:", PYDIR)
        sys.exit(1 if os.environ.get("CI") == "true" else 77)
    with tempfile.TemporaryDirectory() as tmp:
        py = os.path.join(tmp, "py")
        os.makedirs(py)
        shutil.copy(os.path.join(PYDIR, "python.wasm"), py)
        shutil.copytree(os.path.join(PYDIR, "lib"), os.path.join(py, "lib"), symlinks=True)
        jsonpy = os.path.join(py, "lib", "python3.11", "json", "__init__.py")

        want = run(py, "off", PROBE)
        check(want == (b"0 [1, 2]\n", b"", 0), f"cache off: {want}")

        cache = os.path.join(tmp, "cache")
        got = run(py, cache, PROBE)
        check(got == want, f"first run: {got}")
        snaps = snapshots(cache)
        check(len(snaps) == 1, f"expected one snapshot file, found {snaps}")
        snap = snaps[0]

        def used(path):
            """A warm run; true when the saved snapshot at path was used as it was."""
            before = os.stat(path)
            os.utime(path, (1_000_000_000, 1_000_000_000))
            got = run(py, cache, PROBE)
            after = os.stat(path) if os.path.exists(path) else None
            return got, bool(after and after.st_ino == before.st_ino and
                             after.st_mtime > 1_000_000_000)

        got, hit = used(snap)
        check(got == want, f"warm run: {got}")
        check(hit, "the warm process did not use the saved snapshot")

        # an edited module of the library: the old snapshot is not used
        with open(jsonpy, "ab") as f:
            f.write(b"PERI_MARK = 1\n")
        got, hit = used(snap)
        check(got == (b"1 [1, 2]\n", b"", 0), f"after editing json: {got}")
        check(not hit, "the snapshot of the old library was used")
        fresh = [s for s in snapshots(cache) if s != snap]
        check(len(fresh) == 1, f"after editing json: snapshots {snapshots(cache)}")
        got, hit = used(fresh[0])
        check(got == (b"1 [1, 2]\n", b"", 0) and hit, f"the new snapshot is not used: {got}")

        # the same size and the old modification time: still a different library
        st = os.stat(jsonpy)
        with open(jsonpy, "rb") as f:
            text = f.read()
        with open(jsonpy, "wb") as f:
            f.write(text.replace(b"PERI_MARK = 1", b"PERI_MARK = 2"))
        os.utime(jsonpy, ns=(st.st_atime_ns, st.st_mtime_ns))
        check(os.stat(jsonpy).st_size == st.st_size, "size changed")
        got, hit = used(fresh[0])
        check(got == (b"2 [1, 2]\n", b"", 0), f"after a same-size edit: {got}")
        check(not hit, "a same-size edit with the old mtime was not noticed")

        # the run's own files never reach the boot
        poison = io.BytesIO()
        with zipfile.ZipFile(poison, "w") as z:
            z.writestr("json/__init__.py", "POISON = 1\n")
        zpath = os.path.join(tmp, "poison.zip")
        with open(zpath, "wb") as f:
            f.write(poison.getvalue())
        probe = b"import json\nprint(getattr(json, 'POISON', None))\n"
        for label, cache_dir, extra in (("cold, cache off", "off", ()),
                                        ("cold, new cache", os.path.join(tmp, "c2"), ()),
                                        ("one process", "off", ("--repeat", "3"))):
            got = run(py, cache_dir, probe,
                      ("--file", "/usr/local/lib/python311.zip=" + zpath) + extra)
            n = 3 if extra else 1
            check(got == (b"None\n" * n, b"", 0), f"{label}: the run's file reached the boot: {got}")
        # and a later process without the file starts clean from what was saved
        got = run(py, os.path.join(tmp, "c2"), probe)
        check(got == (b"None\n", b"", 0), f"after a poisoned run: {got}")
    print("ok: saved snapshot used, tied to the library, blind to the run's files")


main()
