#!/usr/bin/env python3
"""place.e2e — `peri place run|decide` end to end (real room, real bubblewrap).

usage: e2e.py PERI FIXTURES
  1. {"shell":...} with requirements ["shell"] -> L1 native_sandbox
  2. a WASI program -> wasm_room, result bytes = `peri isolate run` + backend/decision
  3. a WASM request that admission rejects (network) -> one promoted native child with
     parent_decision_id = the parent's identity
  4. `decide` prints only the L1 decision; exit codes 0 / 1 / 2
  5. a room run honours the request's limits (the tighter of the request's and the
     room's): cpu_ms 100 stops an endless loop with the room's exact CPU message and
     "stopped_by"; a request above the room's ceiling is capped and says so
Without bubblewrap: exit 77 (skipped), or failure under CI=true.
"""
import base64, hashlib, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

peri, fixtures = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def place(args, req, env=None):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(req if isinstance(req, str) else json.dumps(req))
        path = f.name
    try:
        p = subprocess.run([peri, "place"] + args + [path], capture_output=True, timeout=120,
                           env=env)
    finally:
        os.unlink(path)
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    return p.returncode, lines, p.stdout.decode(), p.stderr.decode()


if not shutil.which("bwrap"):
    sys.exit(missing_dependency("bubblewrap missing"))

# 1. shell -> L1 native
rc, lines, _, err = place(["run"], {"run_id": "e1", "program": {"shell": "echo native; echo e >&2; exit 3"},
                                    "requirements": ["shell"]})
check(rc == 3, f"shell run exit {rc} (ok:false exits 3) {err}")
dec = [l["decision"] for l in lines if "decision" in l]
res = [l["result"] for l in lines if "result" in l]
check(len(dec) == 1 and dec[0]["backend"] == "native_sandbox"
      and dec[0]["reason"] == "required_native_feature", f"shell decision {dec}")
check(res and res[0]["stdout"] == "native\n" and res[0]["stderr"] == "e\n" and res[0]["exitCode"] == 3
      and res[0]["ok"] is False and res[0]["decision"] == dec[0]["identity"], f"shell result {res}")
ev = [l["evidence"] for l in lines if "evidence" in l]
check(ev and ev[0]["schema_version"] == "peri.native-lifecycle.v1" and ev[0]["stopped"] == "confirmed"
      and ev[0]["scratch_removed"] and ev[0]["cgroup_removed"], f"evidence {ev}")
check(list(lines[-1].keys()) == ["result"], "result is the last line")

# 2. a WASI program -> wasm_room, same bytes as `peri isolate run`
for prog, args, files in [("hello.wasm", [], {}),
                          ("probe.wasm", ["args", "x y"], {"/数据/in.txt": "input"})]:
    path = os.path.join(fixtures, prog)
    req = {"run_id": "e2", "program": {"wasm": path, "args": args}, "files": files}
    if not args:
        del req["program"]["args"]
    rc, lines, out, err = place(["run"], req)
    check(rc == 0, f"wasm run exit {rc} {err}")
    dec = [l["decision"] for l in lines if "decision" in l]
    check(len(dec) == 1 and dec[0]["backend"] == "wasm_room" and dec[0]["reason"] == "qualified_wasm_runtime"
          and dec[0]["runtime_profile"] == "room-wasi-p1-yuyan-v1", f"wasm decision {dec}")
    data = open(path, "rb").read()
    with tempfile.TemporaryDirectory() as d:
        pf, inf = os.path.join(d, "p.b64"), os.path.join(d, "in.json")
        open(pf, "w").write(base64.b64encode(data).decode())
        open(inf, "w").write(json.dumps({"args": args, "files": files}, ensure_ascii=False))
        iso = subprocess.run([peri, "isolate", "run", "--runner", "LOADER", "--scope", "place",
                              "--digest", hashlib.sha256(data).hexdigest(), "--program", pf,
                              "--input", inf], capture_output=True, timeout=60)
    check(iso.returncode == 0, f"isolate run {iso.stderr}")
    room = iso.stdout.decode().rstrip("\n")
    # the room's bytes, then backend, decision and the limits the room run had
    want = ('{"result":' + room[:-1] + ',"backend":"wasm_room","decision":"' + dec[0]["identity"] + '"'
            + ',"limits":{"cpu_ms":1000,"wall_ms":5000,"memory_mib":128,"output_bytes":65536}}}')
    got = out.splitlines()[-1]
    check(got == want, f"wasm result bytes\n got {got}\nwant {want}")

# 3. admission rejects -> one promoted native child carrying the parent id
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    f.write('{"network": true}')
    pol = f.name
rc, lines, _, err = place(["run", "--policy", pol], {"run_id": "e3", "program": {"wasm": os.path.join(fixtures, "hello.wasm")},
                                                     "network": True})
os.unlink(pol)
check(rc == 0, f"promotion exit {rc} {err}")
dec = [l["decision"] for l in lines if "decision" in l]
oc = [l["outcome"] for l in lines if "outcome" in l]
res = [l["result"] for l in lines if "result" in l]
check(len(dec) == 2, f"two decisions {dec}")
if len(dec) == 2:
    check(dec[0]["backend"] == "wasm_room" and dec[1]["backend"] == "native_sandbox"
          and dec[1]["reason"] == "l2_not_started_promotion"
          and dec[1]["parent_decision_id"] == dec[0]["identity"]
          and dec[1]["request_sha256"] == dec[0]["request_sha256"], f"child {dec}")
    check(res and res[0]["ok"] and res[0]["stdout"] == "hello\n" and res[0]["backend"] == "native_sandbox"
          and res[0]["decision"] == dec[1]["identity"], f"promoted result {res}")
check(oc and oc[0]["kind"] == "runtime_unsupported" and oc[0]["required_features"] == ["network"]
      and oc[0]["workspace_disposition"] == "not_started" and oc[0]["effect_disposition"] == "not_started",
      f"outcome {oc}")

# 3b. native_workspace_ref: the workspace is writable at its own path, nothing else of the host
ws = tempfile.mkdtemp(prefix="peri-place-ws-")
open(os.path.join(ws, "a.txt"), "w").write("hi\n")
outside = tempfile.mkdtemp(prefix="peri-place-outside-")
rc, lines, _, err = place(["run"], {"run_id": "e6", "program": {"shell": f"pwd; cat a.txt; echo new > b.txt; echo x > {outside}/c.txt"},
                                    "requirements": ["shell"], "state_class": "native_workspace_ref", "workspace": ws})
res = lines[-1]["result"] if lines else {}
check(rc == 3 and res.get("stdout") == f"{ws}\nhi\n" and open(os.path.join(ws, "b.txt")).read() == "new\n"
      and os.listdir(outside) == [], f"workspace {res} {os.listdir(outside)}")
check(lines and lines[0]["decision"]["reason"] == "native_state_dependency", f"workspace decision {lines[:1]}")
shutil.rmtree(ws); shutil.rmtree(outside)

# 3c. Ruby: no Ruby in this room -> native ruby (Debian's) in the sandbox
rc, lines, _, err = place(["run"], {"run_id": "e7", "program": {"ruby": "require 'json'; puts JSON.generate({a: 1 + 1}); File.write('/响应/r.txt', 'ok')"}})
res = lines[-1]["result"] if lines else {}
check(rc == 0 and lines[0]["decision"]["reason"] == "wasm_runtime_unavailable" and res.get("stdout") == '{"a":2}\n'
      and res.get("files") == {"/响应/r.txt": "ok"}, f"ruby {lines}")

# 4. decide, exit codes, unavailable
rc, lines, _, _ = place(["decide"], {"run_id": "e4", "program": {"shell": "true"}, "requirements": ["shell"]})
check(rc == 0 and len(lines) == 1 and "decision" in lines[0], f"decide {lines}")
rc, lines, _, _ = place(["run", "--native", "no"], {"run_id": "e5", "program": {"shell": "true"}, "requirements": ["shell"]})
check(rc == 3 and lines[0]["decision"]["status"] == "unavailable"
      and lines[0]["decision"]["reason"] == "native_unavailable"
      and lines[-1]["result"]["ok"] is False and "native_unavailable" in lines[-1]["result"]["error"],
      f"unavailable {lines}")
rc, _, _, err = place(["run"], '{"run_id":"x","program":{"shell":"true"},"bogus":1}')
check(rc == 1 and "unknown field" in err, f"bad request rc {rc} {err}")
rc, _, _, err = place(["run", "--native", "sometimes"], {"run_id": "x", "program": {"shell": "true"}})
check(rc == 2, f"usage rc {rc}")

# 5. request limits in the room
probe = os.path.join(fixtures, "probe.wasm")
rc, lines, out, err = place(["run"], {"run_id": "e8", "program": {"wasm": probe, "args": ["loop"]},
                                      "limits": {"cpu_ms": 100}})
res = lines[-1]["result"] if lines else {}
ev = [l["evidence"] for l in lines if "evidence" in l]
check(rc == 3 and res.get("ok") is False and res.get("error") == "隔离运行失败：CPU 时间超过 100 ms"
      and res.get("stopped_by") == "cpu_ms" and res.get("limits", {}).get("cpu_ms") == 100,
      f"cpu_ms 100 {res}")
check(ev and ev[0]["end"] == "cpu_limit" and ev[0]["limits"]["cpu_ms"] == 100
      and ev[0]["error"] == "隔离运行失败：CPU 时间超过 100 ms", f"cpu evidence {ev}")
rc, lines, out, err = place(["run"], {"run_id": "e9", "program": {"wasm": probe, "args": ["out", "3000", "1"]},
                                      "limits": {"cpu_ms": 60000, "memory_mib": 64, "output_bytes": 1000}})
res = lines[-1]["result"] if lines else {}
ev = [l["evidence"] for l in lines if "evidence" in l]
check(rc == 3 and res.get("limits") == {"cpu_ms": 1000, "wall_ms": 5000, "memory_mib": 64, "output_bytes": 1000}
      and res.get("capped") == ["cpu_ms"] and res.get("stopped_by") == "output_bytes"
      and res.get("error") == "输出超过 1000 字节" and res.get("ok") is False
      and res.get("stdout") == "x" * 1000, f"capped / output {res}")
check(ev and ev[0]["capped"] == ["cpu_ms"] and ev[0]["end"] == "output_limit", f"capped evidence {ev}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("place.e2e: all passed")
