#!/usr/bin/env python3
"""ruby_test.py RUNNER RUBY_WASM SCRIPTS_DIR [ENGINE] — Ruby in the room against native `ruby`.

Runs every scripts/*.rb in the room (ruby_runner: one host, so all runs after the
first start from the startup snapshot) and with Debian's native `ruby` inside
bubblewrap (the same /请求/in.txt, /响应/ paths and stdin), then compares:
  - stdout, byte for byte;
  - the exit status;
  - the files written under /响应/ and /数据/;
  - stderr: empty iff native's is empty; for an uncaught exception the exception
    class on the first line (native is Ruby 3.1, the room Ruby 3.4: the wording of
    backtraces and syntax errors differs between those versions, so only the class
    is compared; error_highlight annotations are not produced in the room).
Also checks: the run after 28_leak_set sees none of its state (29_leak_check), a
script that calls into JavaScript gets a clear error, an endless loop ends at the
CPU limit, and warm runs are fast.

ENGINE (auto, interp, jit or lazy; default: the library's default) is the room's
execution tier for every run. With ENGINE jit or lazy, the scripts also run once more under the
interpreter and every output (stdout, stderr, exit status, files) must be byte-identical
between the two tiers.

Without the Ruby wasm (scripts/deps.sh fetches it) or native ruby/bwrap the test
says it was skipped (exit 77); under CI=true that is a failure instead.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def skip(why):
    if os.environ.get("CI") == "true":
        print(f"FAIL (CI): {why}")
        sys.exit(1)
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


def read(p, mode="rb"):
    try:
        with open(p, mode) as f:
            return f.read()
    except FileNotFoundError:
        return b"" if "b" in mode else ""


def tree(root):
    out = {}
    if not os.path.isdir(root):
        return out
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = read(p)
    return out


def native(script, tmp):
    """Runs `ruby main.rb` in bwrap with / as cwd and /请求, /响应, /数据 bound."""
    base = script[:-3]
    root = os.path.join(tmp, "native-" + os.path.basename(base))
    for d in ("请求", "响应", "数据"):
        os.makedirs(os.path.join(root, d))
    if os.path.exists(base + ".in"):
        shutil.copy(base + ".in", os.path.join(root, "请求", "in.txt"))
    shutil.copy(script, os.path.join(root, "main.rb"))
    stdin = read(base + ".stdin") if os.path.exists(base + ".stdin") else b""
    cmd = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
           "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
           "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
           "--ro-bind", os.path.join(root, "main.rb"), "/main.rb"]
    for d in ("请求", "响应", "数据"):
        cmd += ["--bind", os.path.join(root, d), "/" + d]
    cmd += ["--chdir", "/", "--unshare-all", "--die-with-parent", "--clearenv",
            "--setenv", "PATH", "/usr/bin", "--setenv", "LANG", "C.UTF-8",
            "ruby", "--disable-error_highlight", "--disable-did_you_mean", "main.rb"]
    r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=60)
    files = {}
    for d in ("响应", "数据"):
        for k, v in tree(os.path.join(root, d)).items():
            files[d + "/" + k] = v
    return r.stdout, r.stderr, str(r.returncode), files


def exc_class(err):
    first = err.decode("utf-8", "replace").splitlines()[0] if err else ""
    m = re.search(r"\(([A-Z][A-Za-z0-9_:]*)\)\s*$", first)
    return m.group(1) if m else ("SyntaxError" if "syntax error" in err.decode("utf-8", "replace") else first)


def main():
    runner, wasm, sdir = sys.argv[1], sys.argv[2], sys.argv[3]
    engine = sys.argv[4] if len(sys.argv) > 4 else None
    eng = ["--engine", engine] if engine else []
    if not os.path.exists(wasm):
        skip(f"{wasm} is missing (scripts/deps.sh fetches @ruby/3.4-wasm-wasi)")
    for tool in ("ruby", "bwrap"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (scripts/deps.sh installs it)")
    scripts = sorted(os.path.join(sdir, f) for f in os.listdir(sdir) if f.endswith(".rb"))
    tmp = tempfile.mkdtemp(prefix="peri-ruby-")
    failures = []
    try:
        out = os.path.join(tmp, "room")
        os.makedirs(out)
        r = subprocess.run([runner] + eng + [wasm, out] + scripts, capture_output=True, timeout=900)
        if r.returncode != 0:
            print(r.stdout.decode(), r.stderr.decode())
            print("FAIL: ruby_runner exited", r.returncode)
            sys.exit(1)
        times = {}
        for line in r.stdout.decode().splitlines():
            n, ms = line.split()
            times[n] = float(ms)
        for s in scripts:
            name = os.path.basename(s)[:-3]
            got_out = read(os.path.join(out, name + ".out"))
            got_err = read(os.path.join(out, name + ".err"))
            got_code = read(os.path.join(out, name + ".code"), "r")
            got_files = {}
            for k, v in tree(os.path.join(out, name + ".files")).items():
                got_files[k] = v
            n_out, n_err, n_code, n_files = native(s, tmp)
            problems = []
            if got_out != n_out:
                problems.append(f"stdout: room {got_out!r} native {n_out!r}")
            if got_code != n_code:
                problems.append(f"exit: room {got_code} native {n_code}")
            if got_files != n_files:
                problems.append(f"files: room {sorted(got_files.items())} native {sorted(n_files.items())}")
            if bool(got_err) != bool(n_err):
                problems.append(f"stderr: room {got_err!r} native {n_err!r}")
            elif n_err and n_code != "0" and exc_class(got_err) != exc_class(n_err):
                problems.append(f"stderr class: room {got_err!r} native {n_err!r}")
            elif n_err and n_code == "0" and got_err != n_err:
                problems.append(f"stderr: room {got_err!r} native {n_err!r}")
            status = "ok" if not problems else "FAIL"
            print(f"{status:4} {name:20} {times.get(name, 0):8.1f} ms  exit {got_code}")
            for p in problems:
                print("     ", p)
            if problems:
                failures.append(name)
        if engine in ("jit", "lazy"):
            # the JIT (whole-module or lazy) gives byte-identical outputs to the interpreter.
            iout = os.path.join(tmp, "room-interp")
            os.makedirs(iout)
            r = subprocess.run([runner, "--engine", "interp", wasm, iout] + scripts,
                               capture_output=True, timeout=900)
            if r.returncode != 0:
                print(r.stdout.decode(), r.stderr.decode())
                failures.append("interp-runner")
            jt, it = tree(out), tree(iout)
            if sorted(jt) != sorted(it):
                failures.append("tiers: files")
                print("FAIL tiers: jit files", sorted(jt), "interp files", sorted(it))
            for k in sorted(set(jt) & set(it)):
                if jt[k] != it[k]:
                    failures.append("tiers: " + k)
                    print(f"FAIL tiers: {k}: jit {jt[k][:200]!r} interp {it[k][:200]!r}")
            if not any(f.startswith("tiers") or f == "interp-runner" for f in failures):
                print(f"ok   tiers: {len(jt)} output files byte-identical under jit and interp")
        # The snapshot leaks nothing from one run into the next.
        if read(os.path.join(out, "29_leak_check.out")).decode().splitlines()[-1:] != ["clean"] or \
                b"leaked" in read(os.path.join(out, "29_leak_check.out")):
            failures.append("leak")

        # Special cases, in one more runner process.
        spec = os.path.join(tmp, "special")
        os.makedirs(spec)
        with open(os.path.join(spec, "js.rb"), "w") as f:
            f.write('puts "before"\nrequire "js"\nJS.global\nputs "after"\n')
        with open(os.path.join(spec, "spin.rb"), "w") as f:
            f.write('puts "spinning"\nloop { }\n')
        with open(os.path.join(spec, "after.rb"), "w") as f:
            f.write('puts 1 + 1\n')
        sres = os.path.join(spec, "out")
        os.makedirs(sres)
        r = subprocess.run([runner] + eng + [wasm, sres] + [os.path.join(spec, n) for n in ("js.rb", "spin.rb", "after.rb")],
                           capture_output=True, timeout=600)
        js_err = read(os.path.join(sres, "js.err")).decode()
        js_code = read(os.path.join(sres, "js.code"), "r")
        if "not available in the room" not in js_err or js_code == "0":
            failures.append("js")
            print("FAIL js:", js_code, js_err)
        else:
            print("ok   js: " + js_err.strip().splitlines()[-1])
        spin = read(os.path.join(sres, "spin.code"), "r")
        # The CPU limit (1000 ms) normally; on a starved machine the wall limit (5000 ms)
        # may come first. Either is a limit error, never a normal end.
        if not spin.startswith("platform: ") or not ("CPU 时间超过" in spin or "运行时间超过" in spin):
            failures.append("spin")
            print("FAIL spin:", spin)
        else:
            print("ok   spin: " + spin)
        if read(os.path.join(sres, "after.out")) != b"2\n":
            failures.append("after-spin")
            print("FAIL: the run after the CPU-limited one:", read(os.path.join(sres, "after.out")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(scripts)} scripts; failures: {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
