#!/usr/bin/env python3
"""place.network — a network-on sandbox has a network namespace of its own (pasta):
the outside is reachable, the host's loopback services and abstract AF_UNIX sockets are
not; timeouts and cancels stay what they are and leave no pasta behind.

usage: network_test.py PERI
The test makes its own small "host" so that nothing depends on the real network: as
root it re-runs itself in a new network and mount namespace (unshare) with a dummy
interface eth9 (198.51.100.2/24, default route via 198.51.100.1, pasta's template),
one more host-only address 203.0.113.7 on lo (not copied into the sandbox, so reaching
it proves the path through pasta), and /etc/resolv.conf bound to "nameserver
203.0.113.7", where a tiny DNS responder answers. Servers: TCP on 203.0.113.7 (must be
reached), TCP on 127.0.0.1 and an abstract AF_UNIX socket (must not be, except under
the explicit "host_network" policy, which shows that the probes can see them).
Needs root (unshare, ip), bubblewrap and pasta: else exit 77 (skipped), or failure under
CI=true.
"""
import glob, json, os, shutil, socket, struct, subprocess, sys, tempfile, threading, time

peri = sys.argv[1]
INNER = len(sys.argv) > 2 and sys.argv[2] == "--inner"
HOST_ONLY = "203.0.113.7"
GATEWAY = "198.51.100.1"


def skip(why):
    if os.environ.get("CI") == "true":
        print(why, "under CI"); sys.exit(1)
    print(why + ": skipped"); sys.exit(77)


if not INNER:
    for tool in ("bwrap", "pasta", "unshare", "ip"):
        if not shutil.which(tool):
            skip(f"{tool} missing")
    if os.geteuid() != 0:
        skip("not root (the test builds its own network namespace)")
    p = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", sys.executable,
                        __file__, peri, "--inner"], timeout=600)
    sys.exit(p.returncode)

# ---------------------------------------------------------------- inside the test's namespace
top = tempfile.mkdtemp(prefix="peri-network-")
os.chmod(top, 0o755)
scratch = os.path.join(top, "scratch")
os.makedirs(scratch)
os.chmod(scratch, 0o755)
resolv = os.path.join(top, "resolv.conf")
with open(resolv, "w") as f:
    f.write(f"nameserver {HOST_ONLY}\n")
for cmd in (["ip", "link", "set", "lo", "up"],
            ["ip", "link", "add", "eth9", "type", "veth", "peer", "name", "eth9p"],
            ["ip", "link", "set", "eth9p", "up"],
            ["ip", "addr", "add", "198.51.100.2/24", "dev", "eth9"],
            ["ip", "link", "set", "eth9", "up"],
            ["ip", "route", "add", "default", "via", GATEWAY],
            ["ip", "addr", "add", HOST_ONLY + "/32", "dev", "lo"],
            ["mount", "--bind", resolv, "/etc/resolv.conf"]):
    subprocess.run(cmd, check=True)

failures = []
checks = [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tcp_server(addr):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 0))
    s.listen(16)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            c.sendall(b"HELLO-" + addr.encode() + b"\n")
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    return s.getsockname()[1]


def dns_server(addr):
    """Answers every A query with 192.0.2.99 (and remembers it was asked)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    asked = []

    def serve():
        while True:
            q, peer = s.recvfrom(512)
            if len(q) < 12:
                continue
            qid, = struct.unpack("!H", q[:2])
            end = 12
            while q[end] != 0:
                end += q[end] + 1
            question = q[12:end + 5]
            qtype, = struct.unpack("!H", q[end + 1:end + 3])
            asked.append(qtype)
            an = b"" if qtype != 1 else (b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4)
                                          + socket.inet_aton("192.0.2.99"))
            head = struct.pack("!HHHHHH", qid, 0x8180, 1, 1 if an else 0, 0, 0)
            s.sendto(head + question + an, peer)
    threading.Thread(target=serve, daemon=True).start()
    return asked


outside = tcp_server(HOST_ONLY)
loopback = tcp_server("127.0.0.1")
asked = dns_server(HOST_ONLY)
abstract_name = "peri-network-test-%d" % os.getpid()
us = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
us.bind("\0" + abstract_name)
us.listen(4)
threading.Thread(target=lambda: [c.sendall(b"HELLO-UNIX\n") or c.close()
                                 for c in iter(lambda: us.accept()[0], None)],
                 daemon=True).start()


def left_behind(name):
    """Nothing left: no pasta or bwrap (their command lines name the scratch root), no
    scratch directory."""
    ps = subprocess.run(["pgrep", "-af", scratch], capture_output=True, text=True)
    check(ps.stdout.strip() == "", f"{name}: processes left: {ps.stdout.strip()}")
    check(os.listdir(scratch) == [], f"{name}: scratch left: {os.listdir(scratch)}")


def run(name, shell, policy, limits=None, network=True, alone=True, as_uid=None):
    req = {"run_id": name, "program": {"shell": shell}, "requirements": ["shell", "network"],
           "network": network}
    if limits:
        req["limits"] = limits
    rf = os.path.join(top, name + ".json")
    pf = os.path.join(top, name + ".policy.json")
    with open(rf, "w") as f:
        json.dump(req, f)
    with open(pf, "w") as f:
        json.dump(policy, f)
    t0 = time.monotonic()
    for f in (rf, pf):
        os.chmod(f, 0o644)
    pre = ["setpriv", f"--reuid={as_uid}", f"--regid={as_uid}", "--clear-groups"] if as_uid else []
    p = subprocess.Popen(pre + [peri, "place", "run", "--scratch", scratch, "--policy", pf, rf],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, _ = p.communicate(timeout=120)
    dt = time.monotonic() - t0
    lines = [json.loads(l) for l in stdout.decode().splitlines() if l.strip()]
    res = next((l["result"] for l in lines if "result" in l), {})
    ev = next((l["evidence"] for l in lines if "evidence" in l), {})
    if alone:
        left_behind(name)
    leaves = glob.glob(f"/sys/fs/cgroup/*/peri-{p.pid}-*") + glob.glob(
        f"/sys/fs/cgroup/memory/**/peri-{p.pid}-*", recursive=True)
    check(leaves == [], f"{name}: cgroup leaves left: {leaves}")
    check(ev.get("stopped") == "confirmed" and ev.get("uid") != 0, f"{name}: evidence {ev}")
    return res, ev, dt


PROBE = r"""
import socket, sys
def tcp(host, port):
    try:
        c = socket.create_connection((host, port), timeout=3)
        print(host, "TCP", c.recv(64).decode().strip())
    except OSError as e:
        print(host, "TCP-FAIL", type(e).__name__)
def unix(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + name)
        print("UNIX", s.recv(64).decode().strip())
    except OSError as e:
        print("UNIX-FAIL", type(e).__name__)
tcp("%s", %d)
tcp("127.0.0.1", %d)
tcp("%s", %d)
unix("%s")
try:
    print("DNS", socket.gethostbyname("peri-test.example"))
except OSError as e:
    print("DNS-FAIL", e)
""" % (HOST_ONLY, outside, loopback, GATEWAY, loopback, abstract_name)
def probe_req(extra=""):
    return "python3 - <<'EOF'\n" + PROBE + "\nEOF\n" + extra


# 1. network on: the outside through pasta; the host's loopback, the gateway-as-loopback
#    mapping and abstract sockets are all out of reach.
res, ev, dt = run("pasta", probe_req("ip -o link | grep -c tap || true"), {"network": True})
out = res.get("stdout", "")
check(res.get("ok") is True, f"pasta: {res}")
check(ev.get("network") == "pasta", f"pasta: evidence network {ev.get('network')}")
check(f"{HOST_ONLY} TCP HELLO-{HOST_ONLY}" in out, f"pasta: the outside is not reachable: {out}")
check("127.0.0.1 TCP-FAIL" in out, f"pasta: the host's 127.0.0.1 was reached: {out}")
check(f"{GATEWAY} TCP-FAIL" in out, f"pasta: the gateway reached the host's loopback: {out}")
check("UNIX-FAIL" in out and "HELLO-UNIX" not in out, f"pasta: a host abstract socket: {out}")
check("DNS 192.0.2.99" in out and 1 in asked, f"pasta: DNS through pasta failed: {out} {asked}")
check(dt < 30, f"pasta: took {dt:.1f}s")

# 2. the same probes with the host's namespace (explicit opt-in): they DO see the host,
#    so the denials above are real.
asked.clear()
res, ev, _ = run("host", probe_req(), {"network": True, "host_network": True})
out = res.get("stdout", "")
check(ev.get("network") == "host", f"host: evidence network {ev.get('network')}")
check("127.0.0.1 TCP HELLO-127.0.0.1" in out and "UNIX HELLO-UNIX" in out,
      f"host: the probes cannot see the host (the test could not fail): {out}")

# 3. network requested but the policy does not permit it: no namespace of pasta, no net.
res, ev, _ = run("denied", probe_req(), {"network": False})
out = res.get("stdout", "")
check(ev.get("network") == "none" and "TCP HELLO" not in out and "HELLO-UNIX" not in out,
      f"denied: {ev.get('network')} {out}")

# 4. the wall limit during a network run is a wall-limit stop, never anything else, and
#    pasta goes with the tree (checked by run()).
res, ev, dt = run("wall", "sleep 30", {"network": True}, limits={"wall_ms": 1500})
check(res.get("stopped_by") == "wall_ms" and res.get("error") == "run time over 1500 ms"
      and ev.get("end") == "wall_limit" and dt < 20, f"wall: {dt:.1f}s {res} {ev}")

# 5. a CPU loop with the network on: cpu_ms, reported as such.
res, ev, _ = run("cpu", "while :; do :; done", {"network": True},
                 limits={"cpu_ms": 300, "wall_ms": 20000})
check(res.get("stopped_by") == "cpu_ms" and ev.get("end") == "cpu_limit", f"cpu: {res} {ev}")

# 6. background processes that outlive the command: reaped with pasta (run() checks).
res, ev, _ = run("bg", "(sleep 60 &) ; (python3 -c 'import time; time.sleep(60)' &); echo ok",
                 {"network": True})
check(res.get("ok") is True and "ok" in res.get("stdout", ""), f"bg: {res}")

# 7. a server inside the sandbox is not reachable from the host (no port forwarding).
box = {}
t = threading.Thread(target=lambda: box.update(r=run(
    "inbound", "python3 -c \"import socket,time\ns=socket.socket()\n"
    "s.bind(('0.0.0.0',48123)); s.listen(1); print('listening', flush=True)\n"
    "time.sleep(4)\"", {"network": True}, limits={"wall_ms": 10000})))
t.start()
time.sleep(2)
reached = []
for host in ("127.0.0.1", HOST_ONLY, "198.51.100.2"):
    try:
        socket.create_connection((host, 48123), timeout=1).close()
        reached.append(host)
    except OSError:
        pass
t.join()
check("listening" in box["r"][0].get("stdout", ""), f"inbound: the server did not run: {box}")
check(reached == [], f"inbound: a port bound in the sandbox appeared on the host at {reached}")

# 8. several network runs at once: each has its own namespace and pasta.
threads, results = [], {}
for i in range(3):
    def go(i=i):
        results[i] = run(f"par{i}", probe_req(), {"network": True}, alone=False)
    threads.append(threading.Thread(target=go))
for t in threads:
    t.start()
for t in threads:
    t.join()
left_behind("par")
for i in range(3):
    out = results[i][0].get("stdout", "")
    check(f"TCP HELLO-{HOST_ONLY}" in out and "127.0.0.1 TCP-FAIL" in out, f"par{i}: {out}")

# 9. a caller that is not root: pasta runs as that user; /dev/net/tun must be theirs to
#    open. In a mount namespace of this test, a tun node the user may open, then one they
#    may not: the run either works like root's or fails closed, saying why.
if shutil.which("setpriv"):
    os.chmod(scratch, 0o777)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/dev/net"], check=True)
    subprocess.run(["mknod", "-m", "666", "/dev/net/tun", "c", "10", "200"], check=True)
    res, ev, _ = run("root-tun0666", probe_req(), {"network": True})  # no private node needed
    out = res.get("stdout", "")
    check(f"TCP HELLO-{HOST_ONLY}" in out and "127.0.0.1 TCP-FAIL" in out, f"root-tun0666: {out}")
    res, ev, _ = run("user", probe_req(), {"network": True}, as_uid=4242)
    out = res.get("stdout", "")
    check(ev.get("uid") == 4242 and ev.get("network") == "pasta"
          and f"TCP HELLO-{HOST_ONLY}" in out and "127.0.0.1 TCP-FAIL" in out
          and "UNIX-FAIL" in out, f"user: {ev} {out}")
    os.chmod("/dev/net/tun", 0o600)
    res, ev, _ = run("user-notun", "echo ran", {"network": True}, as_uid=4242)
    check(res.get("ok") is False and "/dev/net/tun" in res.get("error", "")
          and res.get("stdout") == "" and ev.get("end") == "spawn_failed",
          f"user-notun: {res}")
    subprocess.run(["umount", "/dev/net"], check=True)
else:
    check(False, "setpriv missing (util-linux)")

print(f"{checks[0]} checks, {len(failures)} failures")
shutil.rmtree(top, ignore_errors=True)
sys.exit(1 if failures else 0)
