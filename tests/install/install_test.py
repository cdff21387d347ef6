#!/usr/bin/env python3
"""install_test.py MODE BUILD CMAKE SOURCE: the installed Peri-C runs on its own.

MODE tree: `cmake --install BUILD --prefix /usr/local` with DESTDIR=<scratch>, as
           `make install DESTDIR=...` does.
MODE deb:  `cpack -G DEB` in BUILD (package written to a scratch folder), its control
           fields checked, `apt-get -s install` of it resolved against this system (every
           dependency is a Debian package), then unpacked with `dpkg-deb -x` into a
           scratch root.

Then, from the scratch root, with PATH=/usr/bin:/bin (so nothing of the build folder is
found), an empty HOME and an empty working directory:
  - `peri --version` prints `peri <version of CMakeLists.txt>`;
  - `peri run` runs a WASI program (the engine and the room);
  - `peri print` runs one agent turn against the scripted model, whose `shell` call runs
    in the native sandbox: peri finds its peri-agent in libexec/peri, and the turn
    creates the session store under the empty HOME.
Exit 0 = pass, 1 = fail.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

mode, build, cmake, source = sys.argv[1:5]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)
    return cond


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 240)
    return subprocess.run(cmd, **kw)


def project_version():
    text = open(os.path.join(source, "CMakeLists.txt")).read()
    m = re.search(r"project\(peri VERSION ([0-9.]+)", text)
    return m.group(1) if m else "?"


tmp = tempfile.mkdtemp(prefix="peri-install-")
try:
    if mode == "tree":
        env = dict(os.environ, DESTDIR=os.path.join(tmp, "root"))
        r = run([cmake, "--install", build, "--prefix", "/usr/local"], env=env)
        if not check(r.returncode == 0, "cmake --install failed:\n" + r.stdout + r.stderr):
            sys.exit(1)
        prefix = os.path.join(tmp, "root", "usr", "local")
    elif mode == "deb":
        cpack = os.path.join(os.path.dirname(cmake), "cpack")
        pkgdir = os.path.join(tmp, "pkg")
        r = run([cpack, "-G", "DEB", "-B", pkgdir], cwd=build)
        if not check(r.returncode == 0, "cpack failed:\n" + r.stdout + r.stderr):
            sys.exit(1)
        debs = [f for f in os.listdir(pkgdir) if f.endswith(".deb")]
        if not check(len(debs) == 1, "expected one .deb in %s, found %r" % (pkgdir, debs)):
            sys.exit(1)
        deb = os.path.join(pkgdir, debs[0])
        check(re.fullmatch(r"peri_%s_[a-z0-9]+\.deb" % re.escape(project_version()), debs[0]),
              "package file name %s is not peri_<version>_<arch>.deb" % debs[0])
        fields = run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"]).stdout
        check("Package: peri" in fields, "Package field: " + fields)
        check("bubblewrap" in fields, "the package must depend on bubblewrap: " + fields)
        check("libcurl" in fields and "libsqlite3" in fields,
              "shared-library dependencies missing from Depends: " + fields)
        listing = run(["dpkg-deb", "-c", deb]).stdout
        for want in ("./usr/bin/peri", "./usr/libexec/peri/peri-agent", "./usr/lib/libperi.a",
                     "./usr/include/peri/sdk.h", "./usr/share/doc/peri/README.md"):
            check(re.search(re.escape(want) + r"$", listing, re.M), "%s not in the package" % want)
        # apt itself must accept the package on this system: every Depends resolves to a
        # Debian package (a simulation: nothing is installed, no root needed)
        if shutil.which("apt-get"):
            r = run(["apt-get", "-s", "-o", "Debug::NoLocking=1", "install", deb])
            check(r.returncode == 0 and re.search(r"^Inst peri ", r.stdout, re.M),
                  "apt-get cannot install the package:\n" + r.stdout[-2000:] + r.stderr[-2000:])
        r = run(["dpkg-deb", "-x", deb, os.path.join(tmp, "root")])
        if not check(r.returncode == 0, "dpkg-deb -x failed: " + r.stderr):
            sys.exit(1)
        prefix = os.path.join(tmp, "root", "usr")
    else:
        sys.exit("unknown mode " + mode)

    peri = os.path.join(prefix, "bin", "peri")
    agent = os.path.join(prefix, "libexec", "peri", "peri-agent")
    check(os.access(peri, os.X_OK), "%s is not installed" % peri)
    check(os.access(agent, os.X_OK), "%s is not installed" % agent)
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "empty")
    os.makedirs(home)
    os.makedirs(work)
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}

    r = run([peri, "--version"], env=env, cwd=work)
    check(r.returncode == 0 and r.stdout == "peri %s\n" % project_version(),
          "peri --version: rc %d, %r" % (r.returncode, r.stdout))

    probe = os.path.join(source, "tests", "wasi", "fixtures", "wasi_probe.wasm")
    shutil.copy(probe, os.path.join(work, "probe.wasm"))
    r = run([peri, "run", "probe.wasm", "args", "installed"], env=env, cwd=work)
    check(r.returncode == 0 and "[installed]" in r.stdout,
          "peri run: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    os.unlink(os.path.join(work, "probe.wasm"))

    # One agent turn against the scripted model (127.0.0.1 only).
    script = os.path.join(tmp, "script.json")
    with open(script, "w") as f:
        f.write('{"responses": [{"tool_calls": [{"id": "c1", "name": "shell", "arguments":'
                ' {"command": "echo sandboxed-$((6*7)); pwd"}}]},'
                ' {"text": "The installed agent answered."}], "default": {"text": "done"}}')
    port_file = os.path.join(tmp, "port")
    mock = subprocess.Popen([sys.executable, os.path.join(source, "tests", "host", "mock_model.py"),
                             "--script", script, "--port-file", port_file, "--quiet",
                             "--timeout", "200"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            time.sleep(0.05)
        port = open(port_file).read().strip()
        aenv = dict(env, PERI_MODEL="openai:scripted", OPENAI_API_KEY="test-key",
                    OPENAI_BASE_URL="http://127.0.0.1:%s/v1" % port)
        r = run([peri, "print", "Say hello from the installed agent.", "--allow"], env=aenv,
                cwd=work)
        out = r.stdout + r.stderr
        check(r.returncode == 0, "peri print: rc %d\n%s" % (r.returncode, out))
        check("The installed agent answered." in r.stdout, "the model's answer is missing:\n" + out)
        check("sandboxed-42" in out, "the shell call's output is missing:\n" + out)
        check("native_sandbox" in out, "the shell call did not run in the native sandbox:\n" + out)
        check(os.path.exists(os.path.join(home, ".peri", "peri.db")),
              "no session store under the empty HOME")
    finally:
        mock.kill()
        mock.wait()
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("PASS: %s install runs --version, a WASI program and an agent turn" % mode)
