#!/usr/bin/env python3
"""Issue 17 item 2: symbolic and hard links in the room's in-memory file system
(`peri run --file`, beyond the contract), with the probe tests/wasi/fixtures/wasi_probe.c.

- links: one scenario (hard link shares content and inode, symlink/readlink with a
  short buffer, O_NOFOLLOW -> ELOOP, symlink filetype in filestat and readdir, EEXIST,
  EPERM for a directory link and an absolute target, loops and the 40-link limit,
  trailing slashes, rename over links, unlink of a link, unlink while open, dangling
  links with O_CREAT and O_CREAT|O_EXCL). Its transcript must equal the literal below
  AND the transcript of the same program on a real host directory (--dir, the kernel's
  semantics): the in-memory FS answers as a real file system does.
- differential: 80 random sequences of 40 calls (symlink, link with and without
  following, unlink, rename, mkdir, rmdir, write, read with and without following,
  readlink, stat; names with and without a trailing '/') give the same answers in
  memory and on a host directory. (Targets that climb above "/" or pass through a
  missing directory are left out: there the in-memory FS clamps / creates parents.)
- clamp: ".." and climbing link targets stay at the preopen's "/" (in memory); an
  absolute path is refused (ENOTCAPABLE), as on a host directory.
- below: from a directory descriptor opened under the preopen (as the official suite's
  rust/interesting_paths does), ".." in a path or a link target may climb back to that
  directory but not above it (ENOTCAPABLE), in memory and on a host directory alike.
- hostile (argument "hostile"): link churn. 3000 hard links of a 64 MiB file count it
  once; 2000 symlink loops end in ELOOP; a 2000-component self-link ends in ELOOP;
  link/unlink churn reuses the budget; long names until the entries' budget is full
  give ENOSPC. It must end within the time bound, and (Release build) host memory stays
  under 400 MiB although the names asked for would need more than 600 MiB.
usage: mem_links_test.py PERI FIXTURES_DIR [hostile [sanitized|plain]]"""
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

PERI, FIX = sys.argv[1], sys.argv[2]
PROBE = os.path.join(FIX, "wasi_probe.wasm")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)


def run(*args):
    r = subprocess.run([PERI, "run"] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=600, env={})
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


LINKS = """write f: errno 0
mkdir d: errno 0
link f h: errno 0
write h: errno 0
read f: HELLO!
stat f 0: type 4 size 6 nlink 2
same ino: 1
symlink d/../f s: errno 0
readlink s 255: errno 0 [d/../f]
readlink s 3: errno 0 [d/.]
readlink f 255: errno 28 []
readlink nothere 255: errno 44 []
read s: HELLO!
read s nofollow: errno 32
open s nofollow dir: errno 54
stat s 0: type 7 size 6 nlink 1
stat s 1: type 4 size 6 nlink 2
symlink x s: errno 20
symlink x d: errno 20
link f h: errno 20
link d dl: errno 63
link nothere n2: errno 44
link s s-hard: errno 0
readlink s-hard 255: errno 0 [d/../f]
link follow s: errno 0
stat s-f 0: type 4 size 6 nlink 3
symlink /etc/passwd abs: errno 63
stat abs 0: errno 44
symlink l2 l1: errno 0
symlink l1 l2: errno 0
read l1: errno 32
stat l1 1: errno 32
symlink f c0: errno 0
read c39: HELLO!
read c40: errno 32
symlink d sd: errno 0
stat sd/ 0: errno 54
stat sd/ 1: type 3
stat f/ 1: errno 54
stat s/ 1: errno 54
write sd/g: errno 0
symlink g d/sl: errno 0
symlink ../f d/up: errno 0
read d/up: HELLO!
read sd/sl: G
list d: g:4 sl:7 up:7
symlink x r1: errno 0
write g2: errno 0
rename g2 r1: errno 0
stat r1 0: type 4 size 2 nlink 1
read r1: G2
rename s s2: errno 0
readlink s2 255: errno 0 [d/../f]
read s2: HELLO!
rename d sd: errno 54
rename f h: errno 0
unlink s2: errno 0
read f: HELLO!
readlink s2 255: errno 44 []
unlink f/: errno 54
unlink sd/: errno 54
rmdir sd: errno 54
mkdir sd: errno 20
unlink h: errno 0
unlink f: errno 0
unlink s-f: errno 0
read open: HELLO!
open nlink: 0
read f: errno 44
symlink newt dang: errno 0
write dang: errno 0
read newt: N
symlink gone dang2: errno 0
excl dang2: errno 20
unlink l1: errno 0
stat l2 0: type 7 size 2 nlink 1
"""

CLAMP = """write f: errno 0
read ../../f: errno 76
read /f: errno 76
symlink ../../../f up: errno 0
read up: errno 76
mkdir a: errno 0
symlink ../../x/../f a/up2: errno 0
read a/up2: errno 76
"""

BELOW = """mkdir d/n: errno 0 0
write f d/n/g: errno 0 0
open d: errno 0
read d:n/g: deep
read d:n/../n/g: deep
read d:n/../../d/n/g: errno 76
read d:../f: errno 76
read d:../../f: errno 76
symlink d:up d:n/up2: errno 0 0
read d:up: errno 76
read d:n/up2: errno 76
symlink d:n/in: errno 0
read d:n/in: deep
"""

HOSTILE = """3000 links: 0 failed
63 MiB more: errno 0
1 MiB more (128 MiB): errno 0
1 byte more: errno 51
unlink big2: errno 0
2000 loops: 2000 ELOOP
deep: errno 0
open deep: errno 32
churn: 0 failed
long names: many, errno 51
"""

with tempfile.TemporaryDirectory() as t:
    empty = os.path.join(t, "empty")
    open(empty, "w").close()
    mem = ["--file", "/empty=" + empty]
    if len(sys.argv) > 3 and sys.argv[3] == "hostile":
        sanitized = len(sys.argv) > 4 and sys.argv[4] == "sanitized"
        t0 = time.monotonic()
        p = subprocess.Popen([PERI, "run"] + mem + [PROBE, "linkchurn"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env={})
        out, err = p.communicate(timeout=600)
        wall = time.monotonic() - t0
        rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        out = out.decode("utf-8", "replace")
        check(p.returncode == 0 and out == HOSTILE, "link churn: rc %s %r %r" % (p.returncode, out, err[-500:]))
        check(wall < 300, "link churn ended in %.1f s" % wall)
        if not sanitized:
            check(rss_mib < 400, "link churn: peak RSS %.0f MiB" % rss_mib)
        print("link churn: %.1f s wall, peak RSS %.0f MiB" % (wall, rss_mib))
    else:
        rc, out, err = run(*mem, PROBE, "links")
        check(rc == 0 and out == LINKS, "in-memory links transcript: rc %d\n%s\n%s" % (rc, out, err))
        hd = os.path.join(t, "hd")
        os.mkdir(hd)
        rc, hout, err = run("--dir", hd + "::/", PROBE, "links")
        check(rc == 0 and hout == out, "host directory answers alike: rc %d\n%s" % (rc, hout))
        names = ["a", "b", "c", "d/a", "d/b", "d/e", "s", "t", "d/s"]
        targets = ["a", "b", "d", "s", "t", "x", "a/", "d/", ".", "e"]
        kinds = ["sym", "link", "linkf", "unlink", "rename", "mkdir", "rmdir", "write", "read",
                 "readn", "readlink", "stat", "statf"]

        def one(r):
            k = r.choice(kinds)
            n = r.choice(names) + r.choice(["", "", "", "/"])
            if k == "sym":
                return "sym:%s:%s" % (r.choice(targets), n)
            if k in ("link", "linkf", "rename"):
                return "%s:%s:%s" % (k, r.choice(names) + r.choice(["", "", "/"]), n)
            if k == "write":
                return "write:%s:%s" % (n, r.choice(["x", "yy"]))
            return "%s:%s" % (k, n)

        diverged = 0
        for seed in range(80):
            r = random.Random(seed)
            ops = ["mkdir:d"] + [one(r) for _ in range(40)]
            with tempfile.TemporaryDirectory() as h:
                _, hout, _ = run("--dir", h + "::/", PROBE, "ops", *ops)
            _, mout, _ = run(*mem, PROBE, "ops", *ops)
            if hout != mout or hout.count("\n") != len(ops):
                diverged += 1
                hl, ml = hout.splitlines(), mout.splitlines()
                first = next((i for i in range(min(len(hl), len(ml))) if hl[i] != ml[i]), None)
                print("seed %d: host %r, memory %r" % (seed, hl[first] if first is not None else hout[-200:],
                                                       ml[first] if first is not None else mout[-200:]))
        check(diverged == 0, "differential: %d of 80 sequences diverged" % diverged)
        rc, out, err = run(*mem, PROBE, "clamp")
        check(rc == 0 and out == CLAMP, "'..' above the in-memory root refused: %r %r" % (out, err))
        # below: '..' never climbs above a directory descriptor opened under the preopen
        # (rust/interesting_paths), in memory and on a host directory alike
        rc, out, err = run(*mem, PROBE, "below")
        check(rc == 0 and out == BELOW, "in memory, '..' above a directory descriptor: rc %d\n%s%s"
              % (rc, out, err))
        with tempfile.TemporaryDirectory() as hb:
            rc, hout, err = run("--dir", hb + "::/", PROBE, "below")
        check(rc == 0 and hout == BELOW, "on a host directory, '..' above a directory "
              "descriptor: rc %d\n%s%s" % (rc, hout, err))

print("in-memory links: %s" % ("ok" if not failures else "%d failures" % failures))
sys.exit(1 if failures else 0)
