#!/usr/bin/env python3
"""Ruby's startup snapshot saved in the code cache (docs/engine.md, "Snapshots").

`peri ruby` with a fresh cache directory boots Ruby and leaves a snapshot file
(magic PERISNAP, 0600 in the 0700 directory). Then, each in a new process:
  - a warm run uses it: same inode, its last-use time touched (no boot, no new file);
  - outputs (stdout, stderr, exit status) equal those of runs with the cache off;
  - a file with a byte flipped in its memory, its header or its digest, or cut short,
    is refused: the run still prints the right output and the file is replaced by a
    good one (another inode) that the next run uses;
  - four first runs at once into one empty cache all succeed and leave one snapshot
    file and no temporary file.

usage: snapshot_file_test.py PERI RUBY_WASM
Exit 77 (skip) when Ruby's build is missing, unless CI=true.
"""
import os
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
from snapfiles import snapshots  # noqa: E402

PERI, WASM = sys.argv[1], sys.argv[2]
SCRIPTS = {
    "sum.rb": "puts (1..1000).sum\nputs [3, 1, 2].sort.inspect\n",
    "raise.rb": "puts 'before'\nraise ArgumentError, 'boom'\n",
    "exit.rb": "$stderr.puts 'bye'\nexit 3\n",
}


def run(cache, name, env_extra=None):
    env = dict(os.environ, PERI_CODE_CACHE=cache)
    env.pop("PERI_ENGINE", None)
    if env_extra:
        env.update(env_extra)
    p = subprocess.run([PERI, "ruby", "--wasm", WASM, name], env=env, capture_output=True,
                       timeout=600, cwd=os.path.dirname(name))
    # the progress note on a slow boot is not part of the script's output
    err = b"".join(l for l in p.stderr.splitlines(True) if not l.startswith(b"peri ruby: starting"))
    return p.stdout, err, p.returncode


def only_snapshot(cache):
    s = snapshots(cache)
    assert len(s) == 1, f"expected one snapshot file, found {s}"
    assert not [n for n in os.listdir(cache) if n.startswith(".tmp.")], os.listdir(cache)
    return s[0]


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def main():
    if not os.path.isfile(WASM):
        print("Ruby's build is missing:", WASM)
        sys.exit(1 if os.environ.get("CI") == "true" else 77)
    with tempfile.TemporaryDirectory() as tmp:
        for n, src in SCRIPTS.items():
            with open(os.path.join(tmp, n), "w") as f:
                f.write(src)
        paths = {n: os.path.join(tmp, n) for n in SCRIPTS}
        want = {n: run("off", p) for n, p in paths.items()}
        check(want["sum.rb"] == (b"500500\n[1, 2, 3]\n", b"", 0), f"cache off: {want['sum.rb']}")
        check(want["exit.rb"][2] == 3 and want["raise.rb"][2] == 1, "exit statuses")

        cache = os.path.join(tmp, "cache")
        got = run(cache, paths["sum.rb"])
        check(got == want["sum.rb"], f"first run: {got}")
        snap = only_snapshot(cache)
        check(stat.S_IMODE(os.stat(cache).st_mode) == 0o700, "cache dir mode")
        check(stat.S_IMODE(os.stat(snap).st_mode) == 0o600, "snapshot file mode")

        def used(name):
            """Runs name warm; true when the snapshot file was used as it was."""
            before = os.stat(snap)
            os.utime(snap, (1_000_000_000, 1_000_000_000))
            got = run(cache, paths[name])
            check(got == want[name], f"{name} from the saved snapshot: {got} != {want[name]}")
            after = os.stat(only_snapshot(cache))
            return after.st_ino == before.st_ino and after.st_mtime > 1_000_000_000

        for n in SCRIPTS:
            check(used(n), f"{n}: the warm process did not use the saved snapshot")

        size = os.path.getsize(snap)
        with open(snap, "rb") as f:
            data = f.read()
        # a non-zero byte of the memory section (after the header and metadata)
        mem_at = next(i for i in range(65536, size - 32, 4096) if data[i] != 0)
        damages = {
            "memory byte": lambda b: b[:mem_at] + bytes([b[mem_at] ^ 0x40]) + b[mem_at + 1:],
            "header byte": lambda b: b[:20] + bytes([b[20] ^ 1]) + b[21:],
            "digest byte": lambda b: b[:-1] + bytes([b[-1] ^ 0x80]),
            "truncated": lambda b: b[: size // 2],
        }
        for what, damage in damages.items():
            with open(snap, "r+b") as f:
                bad = damage(data)
                f.truncate(0)
                f.write(bad)
            got = run(cache, paths["sum.rb"])
            check(got == want["sum.rb"], f"{what}: output {got}")
            fresh = only_snapshot(cache)
            with open(snap, "rb") as f:
                data = f.read()
            # (not by inode: a freed inode number is often given to the next new file)
            check(fresh == snap and data != bad and len(data) == size,
                  f"{what}: the damaged file was not replaced")
            check(used("sum.rb"), f"{what}: the replacement is not used")

        # concurrent first runs into one empty cache
        cache2 = os.path.join(tmp, "cache2")
        env = dict(os.environ, PERI_CODE_CACHE=cache2)
        env.pop("PERI_ENGINE", None)
        procs = [subprocess.Popen([PERI, "ruby", "--wasm", WASM, paths["sum.rb"]], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                 for _ in range(4)]
        for p in procs:
            out, _ = p.communicate(timeout=900)
            check(p.returncode == 0 and out == want["sum.rb"][0], f"concurrent run: {out}")
        snap = only_snapshot(cache2)
        cache = cache2
        check(used("raise.rb"), "after concurrent first runs: the snapshot is not used")
    print("ok: saved snapshot used, damaged files refused and replaced, concurrent runs safe")


main()
