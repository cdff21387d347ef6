#!/usr/bin/env python3
"""jit_profile.py — where a WASI program's CPU time goes under the JIT, per Wasm function.

    bench/jit_profile.py BUILD_DIR MODULE.wasm [ARGS...]
    bench/jit_profile.py --disasm FUNC BUILD_DIR MODULE.wasm    (machine code of one function)

Compiles MODULE with `peri compile` into a temporary artifact, runs it with `peri run
--engine jit --compiled` under `perf record` (the program's output goes to stderr), and
maps every sample that lies in the translated code to its function: the artifact's
header gives the code section and each defined function's entry offset
(src/wasm/codecache.c), the module's name section gives the names (else func[N]).
Samples outside the JIT code (the engine's C code, the kernel) are listed as such.
`--disasm FUNC` prints FUNC's machine code with objdump (Intel syntax, offsets from the
function's entry) instead. Needs perf and objdump; a development tool, not a timed
benchmark (perf's sampling costs a few per cent).
"""
import os
import re
import struct
import subprocess
import sys
import tempfile
from collections import Counter

HDR = struct.Struct("<8sII32s32sIIIIQQQQQQQQ")  # cc_header, 160 bytes


def leb(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def names_of(wasm):
    """(number of imported functions, {function index: name}) from the module."""
    b = open(wasm, "rb").read()
    i, nimp, names = 8, 0, {}
    while i < len(b):
        sid, i = b[i], i + 1
        size, i = leb(b, i)
        end = i + size
        if sid == 2:  # imports: count the functions
            n, j = leb(b, i)
            for _ in range(n):
                for _ in range(2):
                    ln, j = leb(b, j)
                    j += ln
                kind, j = b[j], j + 1
                if kind == 0:
                    nimp += 1
                    _, j = leb(b, j)
                elif kind == 1:  # table: reftype, limits
                    j += 1
                    fl, j = leb(b, j)
                    _, j = leb(b, j)
                    if fl & 1:
                        _, j = leb(b, j)
                elif kind == 2:  # memory: limits
                    fl, j = leb(b, j)
                    _, j = leb(b, j)
                    if fl & 1:
                        _, j = leb(b, j)
                elif kind == 3:  # global: type, mutability
                    j += 2
                else:  # tag
                    j += 1
                    _, j = leb(b, j)
        elif sid == 0:
            ln, j = leb(b, i)
            if b[j:j + ln] == b"name":
                j += ln
                while j < end:
                    sub, j = b[j], j + 1
                    ssz, j = leb(b, j)
                    if sub == 1:
                        n, k = leb(b, j)
                        for _ in range(n):
                            idx, k = leb(b, k)
                            ln2, k = leb(b, k)
                            names[idx] = b[k:k + ln2].decode("utf-8", "replace")
                            k += ln2
                    j += ssz
        i = end
    return nimp, names


def artifact(pcc):
    b = open(pcc, "rb").read()
    h = HDR.unpack_from(b, 0)
    if h[0] != b"PERICODE":
        sys.exit(f"{pcc}: not an artifact")
    nfuncs, code_off, code_len, offs_off = h[7], h[11], h[12], h[13]
    offs = struct.unpack_from(f"<{nfuncs}q", b, offs_off)
    return b, code_off, code_len, offs


def main():
    argv = sys.argv[1:]
    disasm = None
    if argv[:1] == ["--disasm"]:
        disasm, argv = argv[1], argv[2:]
    if len(argv) < 2:
        sys.exit(__doc__)
    build, wasm, args = argv[0], argv[1], argv[2:]
    peri = os.path.join(build, "peri")
    nimp, names = names_of(wasm)
    with tempfile.TemporaryDirectory() as tmp:
        pcc = os.path.join(tmp, "m.pcc")
        subprocess.run([peri, "compile", wasm, "-o", pcc], check=True)
        b, code_off, code_len, offs = artifact(pcc)
        ents = sorted((o, i) for i, o in enumerate(offs) if o >= 0)
        fname = lambda i: names.get(nimp + i, f"func[{nimp + i}]")
        if disasm is not None:
            hit = [i for i in range(len(offs)) if fname(i) == disasm and offs[i] >= 0]
            if not hit:
                sys.exit(f"{disasm}: no such function with machine code")
            o = offs[hit[0]]
            nxt = min([x for x, _ in ents if x > o] + [code_len])
            raw = os.path.join(tmp, "f.bin")
            open(raw, "wb").write(b[code_off + o:code_off + nxt])
            subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", "-M", "intel", raw])
            return
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-o", data, "--", peri, "run", "--engine", "jit",
                        "--code-cache", "off", "--compiled", pcc, wasm, *args],
                       stdout=sys.stderr, check=True)
        mm = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events"],
                            capture_output=True, text=True).stdout
        span = (code_len + 4095) // 4096 * 4096
        base = None
        for line in mm.splitlines():  # the code's executable mapping: a copy or the file
            m = re.search(r"\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (\S+) .*\]: r-xp (\S+)", line)
            if not m:
                continue
            start, size, pgoff, path = int(m[1], 16), int(m[2], 16), int(m[3], 16), m[4]
            if path == pcc:
                base = start - pgoff + code_off
            elif path == "//anon" and size == span:
                base = start
        ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"],
                             capture_output=True, text=True).stdout.split()
    cnt, total, outside = Counter(), 0, 0
    starts = [o for o, _ in ents]
    import bisect
    for s in ips:
        ip = int(s, 16)
        total += 1
        if base is None or not (base <= ip < base + code_len):
            outside += 1
            continue
        k = bisect.bisect_right(starts, ip - base) - 1
        cnt[fname(ents[k][1]) if k >= 0 else "(entry table)"] += 1
    if not total:
        sys.exit("no samples")
    print(f"{total} samples; in JIT code {100 * (total - outside) / total:.1f} %"
          + ("" if base is not None else " (the code mapping was not found)"))
    for f, n in cnt.most_common(25):
        print(f"{100 * n / total:6.2f} %  {f}")
    print(f"{100 * outside / total:6.2f} %  (outside the JIT code: the engine's C code, the kernel)")


if __name__ == "__main__":
    main()
