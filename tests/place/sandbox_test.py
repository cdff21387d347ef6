#!/usr/bin/env python3
"""place.sandbox — break-out attempts against the native sandbox; every one must fail.

usage: sandbox_test.py PERI
Each case runs `peri place run --scratch DIR` with a {"shell":...} request and then
checks the machine: no process of the run's uid (from its evidence) is left, the
scratch root DIR is empty, and no cgroup leaf of the CLI process remains.
Without bubblewrap: exit 77 (skipped), or failure under CI=true.
"""
import glob, json, os, shutil, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

peri = sys.argv[1]
failures = []
scratch = tempfile.mkdtemp(prefix="peri-place-scratch-")
os.chmod(scratch, 0o755)


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(name, shell, limits=None, network=None, env=None, policy=None, timeout=120):
    req = {"run_id": name, "program": {"shell": shell}, "requirements": ["shell"]}
    if limits:
        req["limits"] = limits
    if network is not None:
        req["network"] = network
    args = [peri, "place", "run", "--scratch", scratch]
    tmp = []
    if policy is not None:
        pf = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        pf.write(json.dumps(policy)); pf.close(); tmp.append(pf.name)
        args += ["--policy", pf.name]
    rf = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    rf.write(json.dumps(req)); rf.close(); tmp.append(rf.name)
    t0 = time.monotonic()
    p = subprocess.Popen(args + [rf.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = p.communicate(timeout=timeout)
    dt = time.monotonic() - t0
    for t in tmp:
        os.unlink(t)
    lines = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
    res = next((l["result"] for l in lines if "result" in l), {})
    # exit 0 for ok:true, 3 for ok:false (docs/placement.md)
    check(p.returncode == (0 if res.get("ok") else 3), f"{name}: exit {p.returncode} {err.decode()[:300]}")
    ev = next((l["evidence"] for l in lines if "evidence" in l), {})
    # after every case: nothing left behind
    uid = ev.get("uid")
    if uid is not None and uid != 0 and uid != os.getuid():
        ps = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-u", str(uid)], capture_output=True, text=True)
        check(ps.stdout.strip() == "", f"{name}: processes of uid {uid} left: {ps.stdout.strip()}")
    check(os.listdir(scratch) == [], f"{name}: scratch left: {os.listdir(scratch)}")
    leaves = glob.glob(f"/sys/fs/cgroup/*/peri-{p.pid}-*") + glob.glob(f"/sys/fs/cgroup/memory/**/peri-{p.pid}-*", recursive=True)
    check(leaves == [], f"{name}: cgroup leaves left: {leaves}")
    check(ev.get("stopped") == "confirmed" and ev.get("process_tree_reaped") is True
          and ev.get("scratch_removed") is True and ev.get("cgroup_removed") is True,
          f"{name}: evidence {ev}")
    return res, ev, dt


if not shutil.which("bwrap"):
    sys.exit(missing_dependency("bubblewrap missing"))

# 1. TCP connect to a listener the test opened on 127.0.0.1 (network off; network asked
#    for but not permitted by the policy; network on, through pasta)
lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lsock.bind(("127.0.0.1", 0)); lsock.listen(8); lsock.setblocking(False)
port = lsock.getsockname()[1]
probe = (f"python3 -c 'import socket\ntry:\n socket.create_connection((\"127.0.0.1\",{port}),timeout=2); print(\"CONNECTED\")\n"
         f"except Exception as e: print(\"BLOCKED\", e)'")
cases = [("tcp", None, None), ("tcp-net-not-permitted", True, {"network": False})]
if shutil.which("pasta"):  # network on: a namespace of its own, the host's loopback stays out
    cases.append(("tcp-net-on", True, {"network": True}))
elif os.environ.get("CI") == "true":
    check(False, "pasta (passt) missing under CI")
for label, net, pol in cases:
    res, ev, _ = run(label, probe, network=net, policy=pol)
    check("BLOCKED" in res.get("stdout", "") and "CONNECTED" not in res.get("stdout", ""), f"{label}: {res}")
try:
    c, _ = lsock.accept()
    check(False, "tcp: the listener accepted a connection from the sandbox")
    c.close()
except BlockingIOError:
    pass
lsock.close()

# 2. resolve a host name
res, _, _ = run("dns", "python3 -c 'import socket\ntry:\n print(\"RESOLVED\", socket.getaddrinfo(\"example.com\", 80)[0])\n"
                       "except Exception as e: print(\"NORESOLVE\", e)'; getent hosts localhost || echo NOHOSTS")
check("NORESOLVE" in res.get("stdout", "") and "RESOLVED" not in res.get("stdout", "")
      and "NOHOSTS" in res.get("stdout", ""), f"dns: {res}")

# 3. read files the test created outside the scratch: in /tmp and in $HOME
home = os.path.expanduser("~")
secret = "peri-secret-%d" % os.getpid()
fd, tmp_secret = tempfile.mkstemp(prefix="peri-place-secret-", dir="/tmp")
os.write(fd, secret.encode()); os.close(fd); os.chmod(tmp_secret, 0o644)
fd, home_secret = tempfile.mkstemp(prefix="peri-place-secret-", dir=home)
os.write(fd, secret.encode()); os.close(fd); os.chmod(home_secret, 0o644)
res, _, _ = run("read", f"cat {tmp_secret}; cat {home_secret}; ls {home} /root /tmp; cat /proc/1/root{tmp_secret}; echo done")
out = res.get("stdout", "") + res.get("stderr", "")
check(secret not in out and out.count("No such file") >= 3, f"read: secret visible: {out[:500]}")
check("done" in res.get("stdout", ""), f"read: did not run: {res}")

# 4. write outside the scratch
outdir = tempfile.mkdtemp(prefix="peri-place-out-")
os.chmod(outdir, 0o777)
res, _, _ = run("write", f"echo x > {outdir}/pwned; echo x > {home}/peri-pwned-{os.getpid()}; "
                         f"echo x > /usr/pwned; mkdir -p {outdir}; echo y > {outdir}/pwned2; echo done")
check(os.listdir(outdir) == [] and not os.path.exists(f"{home}/peri-pwned-{os.getpid()}")
      and not os.path.exists("/usr/pwned"), f"write: a file appeared outside: {os.listdir(outdir)}")
shutil.rmtree(outdir)

# 5. see the test's own processes in /proc
res, _, _ = run("proc", "for p in /proc/[0-9]*; do echo \"$p $(tr '\\0' ' ' < $p/cmdline)\"; done; echo count=$(ls -d /proc/[0-9]* | wc -l)")
out = res.get("stdout", "")
check("sandbox_test.py" not in out and "place run" not in out and f"/proc/{os.getpid()} " not in out.replace(f"/proc/{os.getpid()} /bin/sh", ""),
      f"proc: host processes visible: {out[:500]}")
count = int(out.split("count=")[-1].strip() or 99) if "count=" in out else 99
check(count <= 4, f"proc: {count} processes visible")

# 6. a background process surviving the run
res, ev, _ = run("background", "(sleep 300 &); setsid sleep 301 & nohup sleep 302 >/dev/null 2>&1 & echo started")
check(res.get("stdout") == "started\n", f"background: {res}")
leftover = subprocess.run(["pgrep", "-f", "sleep 30[012]$"], capture_output=True, text=True).stdout.split()
mine = [p for p in leftover if os.path.exists(f"/proc/{p}") and os.stat(f"/proc/{p}").st_uid == ev.get("uid")]
check(mine == [], f"background: survivors {mine}")

# 7. a fork bomb
res, ev, dt = run("forkbomb", "f(){ f | f & }; f; sleep 3; echo end", limits={"processes": 32, "wall_ms": 8000})
check(dt < 60, f"forkbomb: took {dt:.1f}s")
check("fork" in res.get("stderr", "").lower() or res.get("ok") is False, f"forkbomb: no limit hit: {res}")

# 8. a CPU loop, killed at cpu_ms
res, ev, dt = run("cpu", "while :; do :; done", limits={"cpu_ms": 500, "wall_ms": 30000})
check(res.get("ok") is False and res.get("error") == "CPU time over 500 ms" and ev.get("end") == "cpu_limit",
      f"cpu: {res} {ev}")
check(dt < 20, f"cpu: took {dt:.1f}s")

# 9. allocating past memory_mib
res, ev, _ = run("memory", "python3 -c 'b = bytearray(400 << 20); b[::4096] = b\"x\" * len(b[::4096]); print(\"ALLOCATED\")'",
                 limits={"memory_mib": 64})
check(res.get("ok") is False and "ALLOCATED" not in res.get("stdout", ""), f"memory: {res}")
peak = ev.get("peaks", {}).get("memory_bytes", 0)
check(ev.get("cgroup") == "none" or peak <= 64 << 20, f"memory: peak {peak} over the limit")

# 10. 100 MB of output: capped, no hang
res, ev, dt = run("output", "head -c 100000000 /dev/zero | tr '\\0' a")
check(res.get("ok") is False and res.get("error", "").startswith("output over")
      and len(res.get("stdout", "")) <= 1 << 20, f"output: ok={res.get('ok')} err={res.get('error')} len={len(res.get('stdout',''))}")
check(dt < 60, f"output: took {dt:.1f}s")

# 11. an environment variable set in the caller
env = dict(os.environ, PERI_PLACE_SECRET="topsecret-env")
res, _, _ = run("env", "env; echo \"[$PERI_PLACE_SECRET]\"", env=env)
check("topsecret-env" not in res.get("stdout", "") and "[]" in res.get("stdout", ""), f"env: {res}")

# 12. the seccomp filter and the namespaces: no new user namespace, no ptrace, no mount
res, _, _ = run("seccomp", "unshare -U true && echo USERNS; unshare -r true && echo USERNS2; "
                           "mount -t tmpfs x /tmp && echo MOUNTED; echo uid=$(id -u)")
out = res.get("stdout", "")
check("USERNS" not in out and "MOUNTED" not in out and "uid=1000" in out, f"seccomp: {res}")

shutil.rmtree(scratch, ignore_errors=True)
for p in (tmp_secret, home_secret):
    os.unlink(p)
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("place.sandbox: all passed")
