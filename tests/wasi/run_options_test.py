#!/usr/bin/env python3
"""`peri run` as a WASI runtime: every option, exit codes, and escape attempts through
--dir (symlink to /etc, "..", absolute paths, links pointing out), each of which must
fail. usage: run_options_test.py PERI FIXTURES_DIR ROOM_FIXTURES_DIR"""
import os
import subprocess
import sys
import tempfile

PERI, FIX, ROOM_FIX = sys.argv[1], sys.argv[2], sys.argv[3]
PROBE = os.path.join(FIX, "wasi_probe.wasm")
ROOM_PROBE = os.path.join(ROOM_FIX, "probe.wasm")
failures = 0
E_PERM, E_NOTCAPABLE, E_BADF = 63, 76, 8


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)


def open_modes(pid, path):
    """The access modes (flags & O_ACCMODE) of pid's descriptors open on path."""
    modes = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != path:
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                modes += [int(l.split()[1], 8) & 3 for l in f if l.startswith("flags:")]
        except OSError:
            pass
    return modes


def append_read_only(args, host_file=None):
    """The probe's appendro on f: its output, and (host_file) the modes of the host
    descriptors open on host_file while the probe holds f open."""
    p = subprocess.Popen([PERI, "run"] + args + [PROBE, "appendro", "f"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={})
    first = p.stdout.readline().decode("utf-8", "replace")
    modes = open_modes(p.pid, host_file) if host_file else None
    out, _ = p.communicate(b"", timeout=120)
    return first + out.decode("utf-8", "replace"), modes


def run(*args, stdin=subprocess.DEVNULL, env=None):
    r = subprocess.run([PERI, "run"] + list(args), stdin=stdin, capture_output=True,
                       timeout=120, env=env if env is not None else {})
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


# ---------------------------------------------------------------- CLI surface
rc, out, err = run("--help")
check(rc == 0 and all(o in out for o in ("--dir HOST[::GUEST]", "--env NAME=VALUE", "--inherit-env",
                                         "--argv0", "--invoke FUNC", "--cpu-ms", "--wall-ms",
                                         "--max-memory-mib", "--max-output", "--version", "134")),
      "peri run --help lists the options: %r" % out)
rc, out, _ = run("--version")
check(rc == 0 and out.startswith("peri run "), "--version: %r" % out)
rc, _, err = run("--no-such-option", PROBE)
check(rc == 2 and "unknown option" in err, "unknown option is a usage error: %d %r" % (rc, err))
rc, _, err = run()
check(rc == 2, "no module: usage error")

# Options only before the module: after it, everything is the program's.
rc, out, _ = run(PROBE, "args", "--env", "X=1", "--")
check(out == "[%s]\n[args]\n[--env]\n[X=1]\n[--]\n" % "/程序.wasm", "args after the module: %r" % out)
rc, out, _ = run("--argv0", "prog", PROBE, "args", "a")
check(out == "[prog]\n[args]\n[a]\n", "--argv0: %r" % out)

# Environment: empty unless given; --env; --inherit-env (then --env after it).
rc, out, _ = run(PROBE, "env", env={"SECRET": "x"})
check(rc == 0 and out == "", "environment empty by default: %r" % out)
rc, out, _ = run("--env", "A=1", "--env", "B=x=y", PROBE, "env")
check(out == "A=1\nB=x=y\n", "--env: %r" % out)
rc, out, _ = run("--inherit-env", "--env", "A=2", PROBE, "env", env={"FROM_HOST": "yes"})
check(out == "FROM_HOST=yes\nA=2\n", "--inherit-env: %r" % out)
rc, _, err = run("--env", "NOEQUALS", PROBE, "env")
check(rc == 2, "--env without = is a usage error")

# stdin is connected.
r = subprocess.run([PERI, "run", PROBE, "stdin"], input=b"hello\n" * 1000, capture_output=True)
check(r.stdout.decode().endswith("[6000 bytes]\n") and r.stdout.startswith(b"hello\n"),
      "stdin connected: %r" % r.stdout[-40:])

# poll_oneoff on a connected stdin waits for data (or the end), within its timeout.
with subprocess.Popen(["sh", "-c", "sleep 1.5; echo late"], stdout=subprocess.PIPE) as slow:
    r = subprocess.run([PERI, "run", PROBE, "pollin", "300"], stdin=slow.stdout, capture_output=True)
check(r.stdout.decode() == "poll=0\n", "poll stdin times out while no data: %r" % r.stdout)
r = subprocess.run([PERI, "run", PROBE, "pollin", "5000"], input=b"abc\n", capture_output=True)
check(r.stdout.decode() == "poll=1\nread=4\n", "poll stdin with data: %r" % r.stdout)
r = subprocess.run([PERI, "run", PROBE, "pollin", "5000"], stdin=subprocess.DEVNULL, capture_output=True)
check(r.stdout.decode() == "poll=1\nread=0\n", "poll stdin at its end: %r" % r.stdout)

# Exit codes: the program's; 134 and a message for a trap.
rc, _, _ = run(PROBE, "exit", "7")
check(rc == 7, "exit status 7: %d" % rc)
rc, _, err = run(PROBE, "trap")
check(rc == 134 and "trap" in err and "unreachable" in err, "trap: 134 + message: %d %r" % (rc, err))

# --invoke FUNC ARGS: a function export, its results printed.
rc, out, _ = run("--invoke", "add", PROBE, "40", "2")
check(rc == 0 and out == "42\n", "--invoke: %d %r" % (rc, out))
rc, _, err = run("--invoke", "add", PROBE, "1")
check(rc == 2 and "takes 2 arguments" in err, "--invoke arity: %r" % err)
rc, _, err = run("--invoke", "nope", PROBE)
check(rc == 2 and "no function" in err, "--invoke missing export: %r" % err)

# Limits: memory.grow past --max-memory-mib returns -1; --max-output; --cpu-ms; --wall-ms.
rc, out, _ = run("--max-memory-mib", "4", PROBE, "grow", "100")
check(rc == 0 and out == "grow=-1\n", "grow past the limit returns -1: %r" % out)
rc, out, _ = run(PROBE, "grow", "3000")  # 187.5 MiB: within the generous default
check(rc == 0 and out != "grow=-1\n", "default memory limit is generous: %r" % out)
rc, out, err = run("--max-output", "1000", PROBE, "print", "5000")
check(rc == 1 and "--max-output" in err, "--max-output: %d %r" % (rc, err))
rc, out, _ = run(PROBE, "print", "100000")
check(rc == 0 and len(out) == 100000, "no output limit by default")
rc, _, err = run("--cpu-ms", "100", ROOM_PROBE, "loop")
check(rc == 1 and "CPU" in err, "--cpu-ms: %d %r" % (rc, err))
rc, _, err = run("--wall-ms", "200", ROOM_PROBE, "sleep")
check(rc == 1 and "200 ms" in err, "--wall-ms: %d %r" % (rc, err))
rc, _, err = run("--cpu-ms", "0", PROBE, "env")
check(rc == 2, "--cpu-ms 0 is a usage error")

# --file: 256 allowed, a 257th is an error (not an argument).
with tempfile.TemporaryDirectory() as t:
    src = os.path.join(t, "x")
    open(src, "w").write("x")
    files = []
    for i in range(256):
        files += ["--file", "/f%d=%s" % (i, src)]
    rc, out, _ = run(*files, PROBE, "cat", "/f255")
    check(rc == 0 and out == "x", "256 --file: %d %r" % (rc, out))
    rc, _, err = run(*(files + ["--file", "/f256=" + src]), PROBE, "env")
    check(rc == 2 and "256" in err, "257th --file is an error: %d %r" % (rc, err))

# ---------------------------------------------------------------- --dir
with tempfile.TemporaryDirectory() as t:
    root = os.path.join(t, "root")
    os.makedirs(os.path.join(root, "sub"))
    open(os.path.join(root, "f"), "w").write("inside\n")
    open(os.path.join(root, "sub", "g"), "w").write("deeper\n")
    open(os.path.join(t, "outside"), "w").write("SECRET\n")
    os.symlink("sub/g", os.path.join(root, "link_in"))
    os.symlink("/etc", os.path.join(root, "link_etc"))
    os.symlink("../outside", os.path.join(root, "link_up"))
    os.symlink("sub/../../outside", os.path.join(root, "link_up2"))
    os.symlink(t, os.path.join(root, "sub", "link_abs"))
    os.symlink("loop2", os.path.join(root, "loop1"))
    os.symlink("loop1", os.path.join(root, "loop2"))
    d = "--dir"

    rc, out, _ = run(d, root + "::/", PROBE, "read", "f", "sub/g", "link_in", "sub/../f", "./sub/./g")
    check(out == "f: ok inside\nsub/g: ok deeper\nlink_in: ok deeper\nsub/../f: ok inside\n"
                 "./sub/./g: ok deeper\n", "reads inside, symlink inside resolved: %r" % out)
    attempts = ["link_etc/passwd", "link_etc", "../outside", "sub/../../outside", "..",
                "/etc/passwd", "/f", "link_up", "link_up2", "sub/link_abs/outside",
                "sub/link_abs", "loop1"]
    rc, out, _ = run(d, root + "::/", PROBE, "read", *attempts)
    lines = out.splitlines()
    check(len(lines) == len(attempts), "every escape attempt answered: %r" % out)
    for line in lines:
        check(" ok " not in line and "SECRET" not in line and "root:" not in line,
              "escape attempt refused: %r" % line)
    for path in ("link_etc/passwd", "../outside", "/etc/passwd", "link_up", "sub/link_abs"):
        check("%s: errno %d" % (path, E_NOTCAPABLE) in lines, "%s is ENOTCAPABLE: %r" % (path, out))
    check("loop1: errno 32" in lines, "symlink loop is ELOOP: %r" % out)
    # wasi-libc maps an absolute path onto the preopen named "/": still inside.
    rc, out, _ = run(d, root + "::/", PROBE, "cat", "/etc/passwd")
    check(rc == 1 and "root:" not in out, "libc absolute path stays inside: %r" % out)
    # A guest-made symlink to an absolute path is refused; a hard link out is too.
    rc, out, _ = run(d, root + "::/", PROBE, "symlink", "/etc", "mine")
    check(out == "symlink /etc: errno %d\n" % E_PERM and not os.path.lexists(os.path.join(root, "mine")),
          "symlink to an absolute target refused: %r" % out)
    rc, out, _ = run(d, root + "::/", PROBE, "link", "../outside", "hard")
    check(out == "link ../outside: errno %d\n" % E_NOTCAPABLE, "hard link out refused: %r" % out)
    # path_symlink / path_readlink / path_link inside work.
    rc, out, _ = run(d, root + "::/", PROBE, "symlink", "sub/g", "mine")
    check(out == "symlink sub/g: errno 0\n" and os.readlink(os.path.join(root, "mine")) == "sub/g",
          "path_symlink: %r" % out)
    rc, out, _ = run(d, root + "::/", PROBE, "readlink", "mine")
    check(out == "readlink mine: errno 0 sub/g\n", "path_readlink: %r" % out)
    rc, out, _ = run(d, root + "::/", PROBE, "link", "f", "f2")
    check(out == "link f: errno 0\n" and os.stat(os.path.join(root, "f2")).st_nlink == 2,
          "path_link: %r" % out)
    # Real timestamps.
    rc, out, _ = run(d, root + "::/", PROBE, "mtime", "f")
    check(out == "mtime: errno 0 0 1000000000\n" and int(os.stat(os.path.join(root, "f")).st_mtime) == 10**9,
          "real timestamps: %r" % out)
    # Rights: a dropped right stays dropped; the directory has no seek right.
    rc, out, _ = run(d, root + "::/", PROBE, "rights", "f")
    check(out == "drop 0 regain %d read %d dirseek %d\n" % (E_NOTCAPABLE, E_NOTCAPABLE, E_BADF),
          "rights enforced: %r" % out)
    # APPEND without a write right: the host file is opened read-only (a 0444 file too),
    # a directory opens as without APPEND, and writing is refused.
    os.chmod(os.path.join(root, "f"), 0o444)
    out, modes = append_read_only(["--dir", root + "::/"], os.path.join(root, "f"))
    check(out == "open 0 dir 0 flags 1 write %d\nread inside\n\n" % E_NOTCAPABLE and modes == [0],
          "APPEND with only the read right opens the host file read-only: %r %r" % (out, modes))
    os.chmod(os.path.join(root, "f"), 0o644)
    check(open(os.path.join(root, "f")).read() == "inside\n", "APPEND read-only: file untouched")
    # Writes land in the host directory; a GUEST name other than "/".
    rc, out, _ = run(d, root + "::/data", PROBE, "write", "/data/new.txt", "hello")
    check(rc == 0 and open(os.path.join(root, "new.txt")).read() == "hello", "write via --dir: %r" % out)
    rc, out, _ = run(d, root, PROBE, "cat", root + "/sub/g")
    check(out == "deeper\n", "--dir HOST (guest name = HOST): %r" % out)
    rc, _, err = run(d, os.path.join(t, "missing"), PROBE, "env")
    check(rc == 1 and "missing" in err, "--dir of a missing folder: %r" % err)
    rc, _, err = run(d, root + "::/", "--file", "/x=" + os.path.join(root, "f"), PROBE, "env")
    check(rc == 2, "--file with --dir ::/ is a usage error")

# ---------------------------------------------------------------- the in-memory root
rc, out, _ = run(PROBE, "rights", "f")
check(out == "open: errno 8\n", "no file system without --dir/--file: %r" % out)
with tempfile.TemporaryDirectory() as t:
    src = os.path.join(t, "x")
    open(src, "w").write("x")
    rc, out, _ = run("--file", "/f=" + src, PROBE, "rights", "f")
    # The room answers a read without the right with EBADF (as it always has); WASI
    # allows EBADF or ENOTCAPABLE.
    check(out in ["drop 0 regain %d read %d dirseek %d\n" % (E_NOTCAPABLE, e, E_BADF)
                  for e in (E_BADF, E_NOTCAPABLE)],
          "rights enforced in the in-memory file system: %r" % out)
    out, _ = append_read_only(["--file", "/f=" + src])
    check(out in ["open 0 dir 0 flags 1 write %d\nread x\n" % e for e in (E_BADF, E_NOTCAPABLE)],
          "APPEND with only the read right in the in-memory file system: %r" % out)
    # Beyond the contract the in-memory file system stores atim and mtim as given
    # (a contract run keeps atim = mtim, the reference host's logical clock).
    times_out = ("times: errno 0 0 atim 1000000000 mtim 2000000000\n"
                 "atim now: errno 0 0 atim changed 1 mtim 2000000000\n")
    rc, out, _ = run("--file", "/f=" + src, PROBE, "times", "f")
    check(rc == 0 and out == times_out, "in-memory set_times store atim and mtim: %r" % out)
    hd = os.path.join(t, "hd")
    os.mkdir(hd)
    open(os.path.join(hd, "f"), "w").write("x")
    rc, out, _ = run("--dir", hd + "::/", PROBE, "times", "f")
    check(rc == 0 and out == times_out, "host set_times answer alike: %r" % out)

print("run options: %s" % ("ok" if not failures else "%d failures" % failures))
sys.exit(1 if failures else 0)
