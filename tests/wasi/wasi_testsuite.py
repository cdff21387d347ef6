#!/usr/bin/env python3
"""The official WASI preview 1 testsuite on `peri run` (Python standard library only).

usage: wasi_testsuite.py PERI SUITE_DIR [-v] [--only NAME[,NAME...]] [--mem]

Reads SUITE_DIR/tests/<language>/wasm32-wasip1/*.wasm with their NAME.json specs as
SUITE_DIR/SPECIFICATION.md describes (legacy keys args/env/root/dirs/exit_code/stdout/
stderr, or the operation list run/read/wait). A spec's root (or dirs) folder is copied
to a fresh temporary directory first and preopened as the guest's "/" (--dir COPY::/),
so a failing test cannot leave debris behind. The environment is exactly the spec's.
With --mem the folder's files are loaded into the room's in-memory file system instead
(--file /PATH=HOST, its "/" preopen; an argument naming the folder becomes "/"): the
suite then tests the in-memory FS beyond the contract (docs/wasi.md). CTest runs the
link tests so (wasi-testsuite.mem_links).
Prints one line per failing test (every test with -v), `LANG: N passed, M failed` per
language and `N passed, M failed` overall; exits 1 when a test failed.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

TIMEOUT = 120


def load_spec(wasm):
    path = wasm[:-5] + ".json"
    spec = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    if "operations" in spec:
        run = {"args": [], "env": {}, "root": None}
        expect = {"exit_code": 0, "stdout": None, "stderr": None}
        seen_run = False
        for op in spec["operations"]:
            t = op.get("type")
            if t == "run":
                run.update({k: op[k] for k in ("args", "env", "root", "dirs") if k in op})
                seen_run = True
            elif t == "wait":
                if not seen_run:
                    raise ValueError("wait before run")
                expect["exit_code"] = op.get("exit_code", 0)
            elif t == "read":
                if not seen_run:
                    raise ValueError("read before run")
                expect[op.get("id", "stdout")] = op.get("payload", "")
            else:
                raise ValueError("unsupported operation %r (proposal not in preview 1)" % t)
        return run, expect
    run = {"args": spec.get("args", []), "env": spec.get("env", {}), "root": spec.get("root"),
           "dirs": spec.get("dirs", [])}
    # Output is checked only where the spec names it (the reference runner converts a
    # legacy spec to a read operation only for the keys present).
    expect = {"exit_code": spec.get("exit_code", 0), "stdout": spec.get("stdout"),
              "stderr": spec.get("stderr")}
    return run, expect


def writable_copy(src, dst):
    shutil.copytree(src, dst, symlinks=True)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR | stat.S_IRUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)


def run_test(peri, wasm, verbose, mem=False):
    here = os.path.dirname(wasm)
    try:
        run, expect = load_spec(wasm)
    except (ValueError, json.JSONDecodeError) as e:
        return False, "bad spec: %s" % e
    tmp = tempfile.mkdtemp(prefix="peri-wasi-")
    try:
        cmd = [peri, "run"]
        roots = []
        if run.get("root"):
            roots.append((run["root"], "/"))
        for d in run.get("dirs") or []:
            roots.append((d, d))
        args = list(run.get("args") or [])
        for i, (folder, guest) in enumerate(roots):
            copy = os.path.join(tmp, "d%d" % i)
            writable_copy(os.path.join(here, folder), copy)
            if not mem:
                cmd += ["--dir", "%s::%s" % (copy, guest)]
                continue
            for base, _, files in os.walk(copy):
                for name in files:
                    host = os.path.join(base, name)
                    cmd += ["--file", "/%s=%s" % (os.path.relpath(host, copy), host)]
            args = ["/" if a == guest else a for a in args]
        for k, v in (run.get("env") or {}).items():
            cmd += ["--env", "%s=%s" % (k, v)]
        cmd += ["--", wasm] + args
        try:
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=TIMEOUT, env={})
        except subprocess.TimeoutExpired:
            return False, "timed out after %d s" % TIMEOUT
        out = r.stdout.decode("utf-8", "replace")
        err = r.stderr.decode("utf-8", "replace")
        problems = []
        if r.returncode != expect["exit_code"]:
            problems.append("exit code %d, expected %d" % (r.returncode, expect["exit_code"]))
        if expect["stdout"] is not None and out != expect["stdout"]:
            problems.append("stdout %r, expected %r" % (out[:400], expect["stdout"][:400]))
        if expect["stderr"] is not None and err != expect["stderr"]:
            problems.append("stderr %r, expected %r" % (err[:400], expect["stderr"][:400]))
        if problems and err and expect["stderr"] is None:
            problems.append("stderr: %s" % err.strip()[-600:])
        return not problems, "; ".join(problems)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    argv = sys.argv[1:]
    verbose = "-v" in argv
    mem = "--mem" in argv
    only = None
    if "--only" in argv:
        only = argv[argv.index("--only") + 1]
    pos = [a for a in argv if not a.startswith("-") and a != only]
    if len(pos) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    peri, suite = os.path.abspath(pos[0]), pos[1]
    tests_dir = os.path.join(suite, "tests")
    if not os.path.isdir(tests_dir):
        print("wasi-testsuite: no tests in %s" % suite, file=sys.stderr)
        return 1
    total_p = total_f = 0
    for lang in sorted(os.listdir(tests_dir)):
        d = os.path.join(tests_dir, lang, "wasm32-wasip1")
        if not os.path.isdir(d):
            continue
        for f in os.listdir(d):  # artifacts of earlier runs (the spec's preparation step)
            if f.endswith(".cleanup"):
                p = os.path.join(d, f)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        passed = failed = 0
        for f in sorted(os.listdir(d)):
            if not f.endswith(".wasm") or (only and not any(o in f for o in only.split(","))):
                continue
            ok, why = run_test(peri, os.path.join(d, f), verbose, mem)
            if ok:
                passed += 1
            else:
                failed += 1
            if verbose or not ok:
                print("%s %s/%s%s" % ("PASS" if ok else "FAIL", lang, f[:-5],
                                      "" if ok else ": " + why))
        print("%s: %d passed, %d failed" % (lang, passed, failed))
        total_p += passed
        total_f += failed
    print("%d passed, %d failed" % (total_p, total_f))
    return 1 if total_f or total_p == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
