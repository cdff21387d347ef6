#!/usr/bin/env python3
"""bounds_cli.py — `--bounds-checks guard|explicit` of `peri run`, `peri ruby`,
`peri python` and `peri isolate`: a program whose memory access is out of bounds gets
the same trap message under guard pages, explicit checks, the default and the
interpreter, and the mode asked for is the one the engine used, seen from outside the
process in /proc/PID/status while the program waits on stdin (or, for `isolate serve`,
after the run): guard pages reserve 8 GiB of address space per memory (VmPeak) and
install the engine's SIGSEGV handler (SigCgt); explicit checks do neither (the module's
memory has a maximum of one page, so its explicit reservation is 64 KiB). Bad values
are usage errors with the same wording.

The programs are built here (a few bytes of WebAssembly, no toolchain): a WASI command
for `run`, `ruby --wasm` (a module without Ruby's exports runs as a WASI command) and
`isolate`, and a stand-in for CPython's build (`python --python-dir`: the peri_py_*
entry points, same body).

usage: bounds_cli.py PERI SCENARIO [sanitized]
Scenarios: run ruby python isolate. With "sanitized" (ASan build: its shadow memory
makes VmPeak meaningless) only SigCgt is compared. Exit 0 pass, 1 fail.
"""
import json
import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import threading

PERI, SCENARIO = sys.argv[1], sys.argv[2]
SANITIZED = len(sys.argv) > 3 and sys.argv[3] == "sanitized"
GUARD_RESERVE = 8 << 30  # PW_GUARD_RESERVE is 8 GiB + 64 KiB
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# ------------------------------------------------------------ a tiny module encoder
def leb(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def sleb(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if (n == 0 and not b & 0x40) or (n == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def vec(items):
    return leb(len(items)) + b"".join(items)


def name(s):
    return leb(len(s)) + s.encode()


def section(i, body):
    return bytes([i]) + leb(len(body)) + body


I32 = 0x7F


def functype(params, results):
    return b"\x60" + vec([bytes([p]) for p in params]) + vec([bytes([r]) for r in results])


def const(n):
    return b"\x41" + sleb(n)


def store(addr, value):  # i32.store align=2 offset=0
    return const(addr) + const(value) + b"\x36\x02\x00"


FD_WRITE, FD_READ = 0, 1
# "ready\n" to stderr (which every command writes through at once); wait for stdin's end (the test looks at the process meanwhile);
# then an i32.load at 65536, one byte past the memory (one page, maximum one page),
# whose value is stored so that no translation can drop the load.
BODY = (store(0, 16) + store(4, 6) +
        const(2) + const(0) + const(1) + const(40) + b"\x10" + leb(FD_WRITE) + b"\x1a" +
        store(8, 64) + store(12, 16) +
        const(0) + const(8) + const(1) + const(44) + b"\x10" + leb(FD_READ) + b"\x1a" +
        const(48) + const(65536) + b"\x28\x02\x00" + b"\x36\x02\x00")


def module(python_abi):
    types = [functype([I32] * 4, [I32]), functype([], []), functype([], [I32]),
             functype([I32], [I32]), functype([I32, I32], [])]
    imports = [name("wasi_snapshot_preview1") + name("fd_write") + b"\x00" + leb(0),
               name("wasi_snapshot_preview1") + name("fd_read") + b"\x00" + leb(0)]
    if python_abi:  # _initialize, peri_py_init, peri_py_alloc, peri_py_run
        funcs = [1, 2, 3, 4]
        bodies = [b"", const(0), const(1024), BODY]
        exports = [("_initialize", 2), ("peri_py_init", 3), ("peri_py_alloc", 4),
                   ("peri_py_run", 5)]
    else:
        funcs, bodies, exports = [1], [BODY], [("_start", 2)]
    code = [vec([]) + b + b"\x0b" for b in bodies]
    return (b"\x00asm\x01\x00\x00\x00" +
            section(1, vec(types)) +
            section(2, vec(imports)) +
            section(3, vec([leb(f) for f in funcs])) +
            section(5, vec([b"\x01" + leb(1) + leb(1)])) +
            section(7, vec([name(n) + b"\x00" + leb(i) for n, i in exports] +
                           [name("memory") + b"\x02" + leb(0)])) +
            section(10, vec([leb(len(c)) + c for c in code])) +
            section(11, vec([b"\x00" + const(16) + b"\x0b" + vec([bytes([c]) for c in b"ready\n"])])))


# ------------------------------------------------------------ the process's own view
def proc_view(pid):
    """(VmPeak in bytes, whether SIGSEGV is caught) of a live process."""
    st = open("/proc/%d/status" % pid).read()
    peak = int(st.split("VmPeak:")[1].split()[0]) * 1024
    sigcgt = int(st.split("SigCgt:")[1].split()[0], 16)
    return peak, bool(sigcgt & (1 << (11 - 1)))


def env():
    e = dict(os.environ)
    e.pop("PERI_ENGINE", None)
    e["PERI_CODE_CACHE"] = "off"
    # ASan's own SIGSEGV handler would hide whether the engine installed one
    e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":handle_segv=0").lstrip(":")
    return e


def expect_mode(bounds, view, what):
    peak, caught = view
    guard = bounds != "explicit"
    check(caught == guard, "%s: SIGSEGV %s by the engine (SigCgt), want %s" %
          (what, "caught" if caught else "not caught", "caught" if guard else "not caught"))
    if not SANITIZED:
        check((peak >= GUARD_RESERVE) == guard,
              "%s: VmPeak %d bytes, want %s 8 GiB" % (what, peak, ">=" if guard else "<"))


def waiting_run(args, bounds, what):
    """Runs args (a program that writes "ready" on stderr and then reads stdin to its
    end), looks at the process while it waits, then ends its stdin. Returns (rc, the
    rest of stderr)."""
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env())
    timer = threading.Timer(120, p.kill)
    timer.start()
    line = p.stderr.readline()
    check(line == b"ready\n", "%s: the program started: %r" % (what, line))
    if line == b"ready\n" and bounds is not None:
        expect_mode(bounds, proc_view(p.pid), what)
    p.stdin.close()
    out = p.stdout.read()
    err = p.stderr.read().decode("utf-8", "replace")
    rc = p.wait()
    timer.cancel()
    check(out == b"", "%s: no output on stdout: %r" % (what, out))
    return rc, err


MODES = [("guard", ["--bounds-checks", "guard"]), ("explicit", ["--bounds-checks", "explicit"]),
         ("default", [])]


def same_trap(cmd, argv_of, want_rc, usage_rc=2):
    """Every mode under the JIT, and the interpreter, give want_rc and one message."""
    msgs = {}
    for bounds, opt in MODES:
        what = "peri %s %s" % (cmd, bounds)
        rc, err = waiting_run(argv_of(opt + ["--engine", "jit"]), bounds, what)
        last = err.strip().split("\n")[-1] if err.strip() else ""
        check(rc == want_rc, "%s: exit %d, want %d: %r" % (what, rc, want_rc, err[-500:]))
        check("memory access out of bounds" in last, "%s: the trap message: %r" % (what, err))
        msgs[bounds] = last
    rc, err = waiting_run(argv_of(["--engine", "interp"]), None, "peri %s interp" % cmd)
    msgs["interp"] = err.strip().split("\n")[-1] if err.strip() else ""
    check(len(set(msgs.values())) == 1, "peri %s: one trap message in every mode: %r" % (cmd, msgs))
    print("peri %s: %r in every mode" % (cmd, msgs["guard"]))
    r = subprocess.run(argv_of(["--bounds-checks", "fence"]), capture_output=True, env=env(),
                       stdin=subprocess.DEVNULL, timeout=60)
    err = r.stderr.decode()
    check(r.returncode == usage_rc and
          ('peri %s: --bounds-checks wants guard or explicit, got "fence"' % cmd.split()[0]) in err,
          "peri %s --bounds-checks fence: a usage error: %d %r" % (cmd, r.returncode, err[:300]))
    r = subprocess.run(argv_of(["--help"]), capture_output=True, env=env(),
                       stdin=subprocess.DEVNULL, timeout=60)
    out = r.stdout.decode()
    check("--bounds-checks" in out and "guard" in out and "explicit" in out,
          "peri %s --help names --bounds-checks: %r" % (cmd, out[-800:]))


tmp = tempfile.mkdtemp()
wasi = os.path.join(tmp, "oob.wasm")
with open(wasi, "wb") as f:
    f.write(module(False))

if SCENARIO == "run":
    same_trap("run", lambda opt: [PERI, "run"] + opt + [wasi], 134)
elif SCENARIO == "ruby":
    script = os.path.join(tmp, "main.rb")
    with open(script, "w") as f:
        f.write("puts 1\n")
    same_trap("ruby", lambda opt: [PERI, "ruby", "--wasm", wasi] + opt + [script], 1)
elif SCENARIO == "python":
    build = os.path.join(tmp, "py")
    os.makedirs(os.path.join(build, "lib", "python3.11"))
    with open(os.path.join(build, "python.wasm"), "wb") as f:
        f.write(module(True))
    script = os.path.join(tmp, "main.py")
    with open(script, "w") as f:
        f.write("print(1)\n")
    same_trap("python", lambda opt: [PERI, "python", "--python-dir", build] + opt + [script], 1)
elif SCENARIO == "isolate":
    data = module(False)
    b64, digest = base64.b64encode(data).decode(), hashlib.sha256(data).hexdigest()
    pfile, ifile = os.path.join(tmp, "p.b64"), os.path.join(tmp, "in.json")
    with open(pfile, "w") as f:
        f.write(b64)
    with open(ifile, "w") as f:
        f.write("{}")

    def iso_run(opt):
        return [PERI, "isolate", "run", "--runner", "LOADER", "--scope", "s", "--digest",
                digest, "--program", pfile, "--input", ifile] + opt

    # isolate run: the contract's answer, byte for byte the same in every mode
    outs = {}
    for bounds, opt in MODES + [("interp", [])]:
        eng = ["--engine", "interp" if bounds == "interp" else "jit"]
        r = subprocess.run(iso_run(opt + eng), capture_output=True, env=env(),
                           stdin=subprocess.DEVNULL, timeout=120)
        outs[bounds] = (r.returncode, r.stdout, r.stderr)
    check(len(set(outs.values())) == 1, "isolate run: one answer in every mode: %r" % outs)
    text = outs["guard"][1].decode() + outs["guard"][2].decode()
    check("memory access out of bounds" in text, "isolate run: the trap in the answer: %r" % text)
    print("isolate run: %r in every mode" % text)
    # isolate serve: the same answer, and the mode seen in the serving process
    answers = {}
    for bounds, opt in MODES:
        p = subprocess.Popen([PERI, "isolate", "serve", "--engine", "jit", "--wall-ms", "120000"]
                             + opt, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env())
        req = {"jsonrpc": "2.0", "id": 1, "method": "isolate/run",
               "params": {"runner": "LOADER", "scope": "s", "digest": digest, "program": b64,
                          "input": "{}"}}
        p.stdin.write(json.dumps(req).encode() + b"\n")
        p.stdin.flush()
        timer = threading.Timer(120, p.kill)
        timer.start()
        line = p.stdout.readline()
        if line:
            expect_mode(bounds, proc_view(p.pid), "peri isolate serve %s" % bounds)
        p.stdin.close()
        p.wait()
        timer.cancel()
        answers[bounds] = line
    check(len(set(answers.values())) == 1 and answers["guard"],
          "isolate serve: one answer in every mode: %r" % answers)
    check(b"memory access out of bounds" in answers["guard"],
          "isolate serve: the trap in the answer: %r" % answers["guard"])
    r = subprocess.run(iso_run(["--bounds-checks", "fence"]), capture_output=True, env=env(),
                       timeout=60)
    err = r.stderr.decode()
    check(r.returncode == 2 and
          err.startswith('peri isolate: --bounds-checks wants guard or explicit, got "fence"\n'),
          "isolate --bounds-checks fence: %d %r" % (r.returncode, err[:300]))
    r = subprocess.run([PERI, "isolate", "--help"], capture_output=True, env=env(), timeout=60)
    out = r.stdout.decode()
    check("--bounds-checks guard|explicit" in out, "isolate --help: %r" % out)
else:
    print("unknown scenario", SCENARIO)
    sys.exit(2)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
