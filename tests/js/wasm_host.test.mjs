// wasm_host.test.mjs — the Node WebAssembly host (sdk/js/wasm-host.mjs) with the test
// guest (tests/js/guest.c, built here with clang for wasm32-wasi): the start object,
// module loading by path, URL and factory, and every port: streams to a local server
// (read/write, back-pressure, the write bound), refused, a hanging TLS server (timeout),
// starttls (an upgrade after a clear answer: trusted, untrusted, clear bytes, deadline),
// the allow-list, resolution, timers, close-all settlement, hostile pointers, traps and
// exits, and close() with the module's settlement report.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import crypto from "node:crypto";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { pathToFileURL } from "node:url";
import { WasmHost, WasmHostError, checkStartObject, PortError, EventKind, Ports, loadAgentModule } from "../../sdk/js/wasm-host.mjs";
import { REPO, missing } from "./harness.mjs";

const START = Object.freeze({
  cwd: "/work/project",
  settings: { model: "openai:x" },
  storage: { url: "postgresql://peri@db.example:5432/peri", credential: { source: "host" } },
  machineId: "8a0f9c1e-5d7b-4c3e-9a61-2f4b7c9d0e13",
});

let guestPath; // built once per run
function buildGuest() {
  if (guestPath !== undefined) return guestPath;
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "peri-js-guest-")), "guest.wasm");
  const r = spawnSync("clang", ["--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-o", out, path.join(REPO, "tests/js/guest.c")], { encoding: "utf8" });
  guestPath = r.status === 0 ? out : null;
  if (!guestPath) console.error(`cannot build the guest: ${r.error?.message ?? r.stderr}`);
  return guestPath;
}

/** Starts the guest; lines the guest sends are collected; expect(re) waits for one. */
async function guest(t, options = {}) {
  const wasm = buildGuest();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return null;
  const lines = [];
  const waiters = [];
  let partial = "";
  const logs = [];
  const host = await WasmHost.start({
    moduleUrl: wasm,
    start: START,
    send: (b) => {
      partial += Buffer.from(b).toString("utf8");
      let i;
      while ((i = partial.indexOf("\n")) >= 0) {
        lines.push(partial.slice(0, i));
        partial = partial.slice(i + 1);
      }
      for (const w of waiters.splice(0)) w();
    },
    onLog: (level, text) => logs.push([level, text]),
    ...options,
  });
  let seen = 0;
  const expect = async (re, ms = 5000) => {
    const end = Date.now() + ms;
    for (;;) {
      while (seen < lines.length) {
        const l = lines[seen++];
        const m = re.exec(l);
        if (m) return m;
      }
      if (Date.now() > end) throw new Error(`no line matching ${re} within ${ms} ms; lines: ${JSON.stringify(lines)}`);
      await new Promise((r) => {
        waiters.push(r);
        setTimeout(r, 50);
      });
    }
  };
  const cmd = (text) => host.input(text + "\n");
  t.after(() => host.close({ budgetMs: 100 }));
  await expect(/^start \d+$/);
  return { host, lines, logs, expect, cmd };
}

// The peers in these tests close abruptly on purpose (a host closing every port, a
// handle given up with unread bytes): the server's side may then see ECONNRESET, which
// is expected and must not surface as an uncaught error after the test ended.
function server(onConn) {
  return new Promise((resolve) => {
    const s = net.createServer((c) => {
      c.on("error", () => {});
      onConn(c);
    });
    s.listen(0, "127.0.0.1", () => resolve(s));
  });
}

// ------------------------------------------------------------ start object and loading

test("the start object: all four required, checked before the module is loaded", async () => {
  let loaded = 0;
  const moduleFactory = () => {
    loaded++;
    return new Uint8Array(0);
  };
  const cases = [
    [undefined, "the start object is required: { cwd, settings, storage, machineId }"],
    [{ ...START, machineId: undefined }, "the start object lacks machineId: cwd, settings, storage and machineId are all required"],
    [{ settings: {} }, "the start object lacks cwd, storage, machineId: cwd, settings, storage and machineId are all required"],
    [{ ...START, cwd: "work" }, "cwd must be an absolute path"],
    [{ ...START, settings: [] }, "settings must be an object"],
    [{ ...START, machineId: "has space" }, "machineId must be 1..36 printable characters (a persistent UUID)"],
  ];
  for (const [start, msg] of cases) {
    await assert.rejects(WasmHost.start({ start, moduleFactory, send() {} }), (e) =>
      e instanceof WasmHostError && e.reason === "start_object" && e.message === msg);
  }
  for (const url of ["/var/peri/peri.db", "sqlite:peri.db", ":memory:"]) {
    await assert.rejects(WasmHost.start({ start: { ...START, storage: { url } }, moduleFactory, send() {} }), (e) =>
      e.reason === "start_object" && e.message.startsWith(`storage.url must name a remote store (postgresql://...): the local store locator "${url}" is refused`));
  }
  assert.equal(loaded, 0);
  assert.deepEqual(checkStartObject({ ...START, storage: "postgres://h/db" }).storage, { url: "postgres://h/db" });
});

test("module loading: a missing factory is actionable; a missing file is named", async () => {
  await assert.rejects(WasmHost.start({ start: START, send() {} }), (e) =>
    e instanceof WasmHostError && /^moduleFactory is required when no moduleUrl is given/.test(e.message));
  await assert.rejects(loadAgentModule({ moduleUrl: "/x/peri-agent.wasm", loadByUrl: false }), (e) =>
    /^moduleFactory is required: this host cannot load a module by URL/.test(e.message));
  await assert.rejects(loadAgentModule({ moduleUrl: "/nonexistent/peri-agent.wasm" }), (e) =>
    e.reason === "module_missing" && e.message === "the agent module /nonexistent/peri-agent.wasm does not exist");
  await assert.rejects(loadAgentModule({ moduleFactory: () => new Uint8Array([0, 97, 115, 109, 9, 0, 0, 0]) }), (e) => e.reason === "module_invalid");
  await assert.rejects(WasmHost.start({ start: START, moduleUrl: "/x", send: 5 }), (e) => /^send is required/.test(e.message));
  await assert.rejects(WasmHost.start({ start: START, moduleUrl: "/x", send() {}, limits: { readBufer: 1 } }), (e) =>
    e.reason === "options" && e.message === "limits.readBufer is not a limit (readBuffer, writeQueue, maxHandles, connectTimeoutMs, resolveTimeoutMs)");
  await assert.rejects(WasmHost.start({ start: START, moduleUrl: "/x", send() {}, limits: { writeQueue: -1 } }), (e) =>
    e.reason === "options" && e.message === "limits.writeQueue must be a positive integer");
  await assert.rejects(WasmHost.start({ start: START, moduleUrl: "/x", send() {}, allow: ["nohostport"] }), (e) =>
    e.reason === "options" && e.message === 'a grant must be "host:port" or "host:*", got "nohostport"');
});

test("module by file URL and by factory; a module that is not an agent host is refused", async (t) => {
  const wasm = buildGuest();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  const m1 = await loadAgentModule({ moduleUrl: pathToFileURL(wasm) });
  const m2 = await loadAgentModule({ moduleFactory: async () => fs.readFileSync(wasm), loadByUrl: false });
  assert.ok(m1 instanceof WebAssembly.Module && m2 instanceof WebAssembly.Module);
  // a module with none of the exports (the smallest valid module)
  const empty = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
  await assert.rejects(WasmHost.start({ start: START, moduleFactory: () => empty, send() {} }), (e) =>
    e.reason === "module_invalid" && /^the module does not export memory, peri_alloc, /.test(e.message));
});

test("a module that refuses to start: the error names it and carries the cleanup report", async (t) => {
  const wasm = buildGuest();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  const e = await WasmHost.start({ moduleUrl: wasm, start: { ...START, cwd: "/refuse" }, send() {}, onLog() {} }).catch((x) => x);
  assert.ok(e instanceof WasmHostError, String(e));
  assert.equal(e.reason, "start_failed");
  assert.equal(e.message, "the module refused to start (invalid): cwd /refuse is refused by the guest");
  assert.equal(e.settlement.settled, true);
  assert.deepEqual(e.settlement.closed, { streams: 0, resolutions: 0, timers: 1 });
});

// ------------------------------------------------------------ streams

test("a stream to a local server: open, write, read, end, close", async (t) => {
  const srv = await server((c) => c.on("data", (d) => c.write("echo:" + d)).on("end", () => c.end()));
  t.after(() => srv.close());
  const port = srv.address().port;
  const g = await guest(t, { allow: [`127.0.0.1:${port}`] });
  if (!g) return;
  g.cmd(`open 127.0.0.1 ${port}`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${h} 0 $`));
  g.cmd(`write ${h} ping`);
  await g.expect(/^write 0$/);
  await g.expect(new RegExp(`^data ${h} echo:ping$`));
  g.cmd(`shutdown ${h}`);
  await g.expect(/^shutdown 0$/);
  await g.expect(new RegExp(`^eof ${h}$`));
  g.cmd(`close ${h}`);
  await g.expect(/^close 0$/);
  await g.expect(new RegExp(`^ev 3 ${h} 0 $`));
  g.cmd(`close ${h}`); // settled: unknown now
  await g.expect(/^close -2$/);
  assert.equal(g.host.ports.pending, 0);
});

test("refused is a typed error; the stream settles once", async (t) => {
  const srv = await server(() => {});
  const port = srv.address().port;
  await new Promise((r) => srv.close(r)); // nobody listens there now
  const g = await guest(t, { allow: [`127.0.0.1:${port}`] });
  if (!g) return;
  g.cmd(`open 127.0.0.1 ${port}`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${h} ${PortError.REFUSED} `));
  await g.expect(new RegExp(`^ev 3 ${h} ${PortError.REFUSED} `));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(g.lines.filter((l) => l.startsWith(`ev 3 ${h} `)).length, 1);
});

test("a hanging TLS server is a timeout, not a close", async (t) => {
  const sockets = [];
  const srv = await server((c) => sockets.push(c)); // accepts, never answers the handshake
  t.after(() => { sockets.forEach((s) => s.destroy()); srv.close(); });
  const port = srv.address().port;
  const g = await guest(t, { allow: ["localhost:*"], limits: { connectTimeoutMs: 300 } });
  if (!g) return;
  const t0 = Date.now();
  g.cmd(`open localhost ${port} localhost`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${h} ${PortError.TIMEOUT} no connection to localhost:${port} within 300 ms$`));
  await g.expect(new RegExp(`^ev 3 ${h} ${PortError.TIMEOUT} `));
  assert.ok(Date.now() - t0 >= 290);
});

test("the allow-list: an ungranted destination is denied; nothing is granted by default", async (t) => {
  const g = await guest(t, { allow: ["127.0.0.1:1"] });
  if (!g) return;
  g.cmd("open 127.0.0.1 2");
  await g.expect(new RegExp(`^open ${PortError.DENIED} 0$`));
  g.cmd("open example.com 443 example.com");
  await g.expect(new RegExp(`^open ${PortError.DENIED} 0$`));
  g.cmd("resolve example.com");
  await g.expect(new RegExp(`^resolve ${PortError.DENIED} 0$`));
  const g2 = await guest(t);
  g2.cmd("open 127.0.0.1 1");
  await g2.expect(new RegExp(`^open ${PortError.DENIED} 0$`));
});

test("back-pressure: a bounded read buffer pauses the socket; everything arrives", async (t) => {
  const total = 1 << 20;
  const srv = await server((c) => c.end(Buffer.alloc(total, 65)));
  t.after(() => srv.close());
  const port = srv.address().port;
  const g = await guest(t, { allow: [`127.0.0.1:${port}`], limits: { readBuffer: 16384 } });
  if (!g) return;
  g.cmd(`open 127.0.0.1 ${port}`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  g.cmd(`hold ${h}`);
  await g.expect(/^hold 0$/);
  await new Promise((r) => setTimeout(r, 300));
  const st = g.host.ports.streamStats(Number(h));
  assert.equal(st.paused, true);
  assert.ok(st.buffered >= 16384 && st.buffered < 16384 + 128 * 1024, `buffered ${st.buffered}`);
  g.cmd(`auto ${h}`);
  await g.expect(new RegExp(`^eof ${h}$`), 10000);
  const got = g.lines.filter((l) => l.startsWith(`data ${h} `)).reduce((n, l) => n + l.length - `data ${h} `.length, 0);
  assert.equal(got, total);
});

test("the write queue is bounded: beyond it write is limit", async (t) => {
  const srv = await server((c) => c.pause());
  t.after(() => srv.close());
  const port = srv.address().port;
  const g = await guest(t, { allow: [`127.0.0.1:${port}`], limits: { writeQueue: 4096 } });
  if (!g) return;
  g.cmd(`open 127.0.0.1 ${port}`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${h} 0 $`));
  g.cmd(`write ${h} big 5000`);
  await g.expect(new RegExp(`^write ${PortError.LIMIT}$`));
  g.cmd(`write ${h} big 1000`);
  await g.expect(/^write 0$/);
});

test("writable: a writer that hits the bound gets one writable, then writes the rest; every byte arrives", async (t) => {
  // the server does not read at first, so the host's queue fills; then it reads all
  let conn = null;
  const got = crypto.createHash("sha256");
  let n = 0;
  let ended;
  const done = new Promise((r) => (ended = r));
  const srv = await server((c) => {
    conn = c;
    c.pause();
    c.on("data", (d) => {
      got.update(d);
      n += d.length;
    });
    c.on("end", () => ended());
  });
  t.after(() => srv.close());
  const port = srv.address().port;
  const bound = 64 * 1024;
  const g = await guest(t, { allow: [`127.0.0.1:${port}`], limits: { writeQueue: bound } });
  if (!g) return;
  g.cmd(`open 127.0.0.1 ${port}`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${h} 0 $`));
  // write until the bound (the kernel's socket buffers take the first megabytes)
  let total = 0;
  for (let i = 0; i < 4000; i++) {
    g.cmd(`wpat ${h} 16384`);
    const [, e, off] = await g.expect(/^wpat (-?\d+) (\d+)$/);
    total = Number(off);
    if (Number(e) === PortError.LIMIT) break;
    assert.equal(Number(e), 0);
  }
  const queued = g.host.ports.streamStats(Number(h)).queued;
  assert.ok(queued > bound - 16384 && queued <= bound, `queued ${queued}`);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(g.lines.filter((l) => l.startsWith(`ev 6 ${h} `)).length, 0, "no writable while the queue is full");
  conn.resume();
  await g.expect(new RegExp(`^ev 6 ${h} 0 $`));
  assert.ok(g.host.ports.streamStats(Number(h)).queued <= bound / 2);
  for (let i = 0; i < 8; i++) {
    g.cmd(`wpat ${h} 16384`);
    const [, e, off] = await g.expect(/^wpat (-?\d+) (\d+)$/);
    assert.equal(Number(e), 0);
    total = Number(off);
  }
  g.cmd(`shutdown ${h}`);
  await g.expect(/^shutdown 0$/);
  await done;
  assert.equal(n, total);
  const want = crypto.createHash("sha256");
  const chunk = Buffer.alloc(65536);
  for (let off = 0; off < total; off += chunk.length) {
    const len = Math.min(chunk.length, total - off);
    for (let i = 0; i < len; i++) chunk[i] = ((off + i) * 31 + 7) & 255;
    want.update(chunk.subarray(0, len));
  }
  assert.equal(got.digest("hex"), want.digest("hex"));
  assert.equal(g.lines.filter((l) => l.startsWith(`ev 6 ${h} `)).length, 1, "one writable per limit");
});

test("credentials: by kind from an object or a function; not_found, limit with the size, invalid pointers", async (t) => {
  const g = await guest(t, { credentials: { store: "s3cret", "model:openai": "sk-1" } });
  if (!g) return;
  g.cmd("cred store 64");
  await g.expect(/^cred 0 6 s3cret$/);
  g.cmd("cred model:openai 64");
  await g.expect(/^cred 0 4 sk-1$/);
  g.cmd("cred store 2");
  await g.expect(new RegExp(`^cred ${PortError.LIMIT} 6 $`));
  g.cmd("cred telemetry 64");
  await g.expect(new RegExp(`^cred ${PortError.NOT_FOUND} 0 $`));
  g.cmd("credbad");
  const I = PortError.INVALID;
  await g.expect(new RegExp(`^credbad ${I} ${I} ${I}$`));
  const asked = [];
  const f = await guest(t, { credentials: (kind) => (asked.push(kind), kind === "mcp:docs" ? "tok" : undefined) });
  f.cmd("cred mcp:docs 64");
  await f.expect(/^cred 0 3 tok$/);
  f.cmd("cred store 64");
  await f.expect(new RegExp(`^cred ${PortError.NOT_FOUND} 0 $`));
  assert.deepEqual(asked, ["mcp:docs", "store"]);
  // no credentials option: every kind is not_found, never an empty secret
  const none = await guest(t);
  none.cmd("cred store 64");
  await none.expect(new RegExp(`^cred ${PortError.NOT_FOUND} 0 $`));
  await assert.rejects(guest(t, { credentials: "s3cret" }), (e) => e instanceof WasmHostError && e.reason === "options");
  // the secret never travels in the start object
  assert.throws(() => checkStartObject({ ...START, storage: { url: START.storage.url, credential: { source: "inline", value: "pw" } } }),
    (e) => e.reason === "start_object" && /must not carry the secret/.test(e.message));
});

// ------------------------------------------------------------ resolution, timers, clocks

test("resolve: a name, a number, a failure, a cancel", async (t) => {
  const g = await guest(t, { allow: ["localhost:*", "127.0.0.1:*", "no-such-host.invalid:*"], limits: { resolveTimeoutMs: 8000 } });
  if (!g) return;
  g.cmd("resolve localhost");
  const [, h1] = await g.expect(/^resolve 0 (\d+)$/);
  const [, addrs] = await g.expect(new RegExp(`^ev 4 ${h1} 0 (.*)$`));
  assert.ok(addrs.split(",").some((a) => a === "127.0.0.1" || a === "::1"), addrs);
  g.cmd("resolve 127.0.0.1");
  const [, h2] = await g.expect(/^resolve 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 4 ${h2} 0 127.0.0.1$`));
  g.cmd("resolve no-such-host.invalid");
  const [, h3] = await g.expect(/^resolve 0 (\d+)$/);
  const [, err] = await g.expect(new RegExp(`^ev 4 ${h3} (-\\d+) `), 10000);
  assert.ok([PortError.NOT_FOUND, PortError.TIMEOUT, PortError.IO].includes(Number(err)), err);
  // the cancel in the same input as the resolve: no lookup can finish in between
  const h4 = Number(h3) + 1;
  g.host.input(`resolve localhost\nrcancel ${h4}\n`);
  await g.expect(new RegExp(`^resolve 0 ${h4}$`));
  await g.expect(/^rcancel 0$/);
  await g.expect(new RegExp(`^ev 4 ${h4} ${PortError.CANCELLED} cancelled by its owner$`));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(g.lines.filter((l) => l.startsWith(`ev 4 ${h4} `)).length, 1, "one settling event");
});

test("timers fire and cancel; clocks are monotonic and Unix", async (t) => {
  const g = await guest(t);
  if (!g) return;
  g.cmd("now");
  const [, mono, wall] = await g.expect(/^now (\d+) (\d+)$/);
  assert.ok(Math.abs(Number(wall) - Date.now()) < 5000);
  assert.ok(Number(mono) >= 0);
  const t0 = Date.now();
  g.cmd("timer 60");
  const [, h1] = await g.expect(/^timer 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 5 ${h1} 0 $`));
  assert.ok(Date.now() - t0 >= 55);
  g.cmd("timer 100000");
  const [, h2] = await g.expect(/^timer 0 (\d+)$/);
  g.cmd(`tcancel ${h2}`);
  await g.expect(/^tcancel 0$/);
  await g.expect(new RegExp(`^ev 5 ${h2} ${PortError.CANCELLED} cancelled by its owner$`));
  g.cmd(`tcancel ${h2}`);
  await g.expect(new RegExp(`^tcancel ${PortError.INVALID}$`));
  g.cmd("timer -5");
  await g.expect(new RegExp(`^timer ${PortError.INVALID} 0$`));
});

// ------------------------------------------------------------ settlement, hostility, failure

test("a handle given up, or closed by the host, gets only its settling event", async (t) => {
  const srv = await server((c) => c.write("hi"));
  t.after(() => srv.close());
  const port = srv.address().port;
  const events = [];
  const ports = new Ports({
    allow: [`127.0.0.1:${port}`],
    emit: (kind, handle, err, payload, delivered, stale) => events.push({ kind, handle, err, detail: payload ? payload.toString() : "", stale }),
  });
  const until = async (f) => {
    for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(f(), JSON.stringify(events));
  };
  // opened and readable are queued (not delivered) when the owner closes: both go stale
  const [e1, h1] = ports.open("127.0.0.1", port, false, "");
  assert.equal(e1, PortError.OK);
  await until(() => events.some((e) => e.handle === h1 && e.kind === EventKind.READABLE));
  const early = events.filter((e) => e.handle === h1);
  assert.ok(early.every((e) => e.stale && !e.stale()));
  assert.equal(ports.close(h1), PortError.OK);
  assert.ok(early.every((e) => e.stale()));
  assert.deepEqual(events.at(-1), { kind: EventKind.CLOSED, handle: h1, err: PortError.OK, detail: "", stale: undefined });
  // a cancel says who cancelled; close-all says the host closed it, and nothing else goes
  const [, t1] = ports.timerSet(100000n);
  assert.equal(ports.timerCancel(t1), PortError.OK);
  assert.deepEqual(events.at(-1), { kind: EventKind.TIMER, handle: t1, err: PortError.CANCELLED, detail: "cancelled by its owner", stale: undefined });
  const [, h2] = ports.open("127.0.0.1", port, false, "");
  await until(() => events.some((e) => e.handle === h2 && e.kind === EventKind.OPENED));
  ports.closeAll();
  assert.ok(events.filter((e) => e.handle === h2 && e.kind !== EventKind.CLOSED).every((e) => e.stale()));
  assert.deepEqual(events.at(-1), { kind: EventKind.CLOSED, handle: h2, err: PortError.CLOSED, detail: "the port was closed by the host", stale: undefined });
  assert.deepEqual(ports.open("127.0.0.1", port, false, ""), [PortError.CLOSED, 0]);
  assert.deepEqual(ports.timerSet(1n), [PortError.CLOSED, 0]);
  // the settling events were never marked delivered here: the table still holds them
  assert.equal(ports.write(h2, Buffer.from("x")), PortError.CLOSED);
  assert.equal(ports.read(h2, 64)[0], PortError.CLOSED);
  assert.equal(ports.shutdown(h2), PortError.CLOSED);
  assert.equal(ports.read(h2, 0)[0], PortError.INVALID);
  assert.equal(ports.read(99999, 64)[0], PortError.INVALID);
});

test("close-all: every open handle settles with closed, and the promise reports it", async (t) => {
  const srv = await server(() => {});
  t.after(() => srv.close());
  const port = srv.address().port;
  const g = await guest(t, { allow: [`127.0.0.1:${port}`] });
  if (!g) return;
  g.cmd(`open 127.0.0.1 ${port}`);
  const [, hs] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${hs} 0 $`));
  g.cmd("timer 100000");
  const [, ht] = await g.expect(/^timer 0 (\d+)$/);
  const report = await g.host.ports.closeAll();
  assert.deepEqual(report.closed, { streams: 1, resolutions: 0, timers: 1 });
  assert.equal(report.settled, true);
  assert.equal(g.host.ports.pending, 0);
  await g.expect(new RegExp(`^ev 3 ${hs} ${PortError.CLOSED} `));
  await g.expect(new RegExp(`^ev 5 ${ht} ${PortError.CLOSED} `));
  g.cmd("timer 1");
  await g.expect(new RegExp(`^timer ${PortError.CLOSED} 0$`));
});

test("close(): peri_close, the module's settled report, then the ports", async (t) => {
  const g = await guest(t);
  if (!g) return;
  g.cmd("timer 100000");
  await g.expect(/^timer 0 \d+$/);
  const r = await g.host.close({ budgetMs: 2000 });
  assert.equal(r.outcome, "settled");
  assert.deepEqual(r.module, { turns: 0, guest: true });
  assert.deepEqual(r.ports.closed, { streams: 0, resolutions: 0, timers: 1 });
  await g.expect(/^closing$/);
  assert.equal(await g.host.close(), r, "one close operation");
});

test("a hostile module: out-of-range pointers are invalid, never a throw", async (t) => {
  const g = await guest(t, { allow: ["localhost:*"] });
  if (!g) return;
  g.cmd("hostile");
  const [, ...codes] = await g.expect(/^hostile (-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+)$/);
  assert.deepEqual(codes.map(Number), Array(8).fill(PortError.INVALID));
  assert.equal(g.host.failure, null);
  g.cmd("now");
  await g.expect(/^now \d+ \d+$/);
});

test("arbitrary arguments to every port import: typed codes, never a trap", async (t) => {
  const g = await guest(t, { onExit() {} });
  if (!g) return;
  for (const seed of [1, 77, 4242]) {
    g.cmd(`fuzz ${seed} 3000`);
    await g.expect(/^fuzz done 3000 0$/, 20000);
  }
  assert.equal(g.host.failure, null);
  const report = await g.host.ports.closeAll();
  assert.equal(report.settled, true);
  assert.equal(g.host.ports.pending, 0);
});

test("logs and stderr reach the host; a trap or an exit ends the instance, settled", async (t) => {
  let err = "";
  let exitInfo = null;
  const g = await guest(t, { stderr: (s) => (err += s), onExit: (i) => (exitInfo = i) });
  if (!g) return;
  g.cmd("log boom");
  await g.expect(/^log 0$/);
  assert.deepEqual(g.logs.at(-1), [0, "boom"]);
  g.cmd("stderr to-stderr");
  await g.expect(/^stderr 0$/);
  assert.match(err, /to-stderr/);
  g.cmd("trap");
  for (const end = Date.now() + 5000; !g.host.failure && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  assert.equal(g.host.failure.reason, "trap");
  assert.match(exitInfo.message, /^the module trapped in peri_input: /);
  const r = await g.host.close();
  assert.equal(r.outcome, "dead");
  assert.equal(r.ports.settled, true);

  const g2 = await guest(t, { onExit: (i) => (exitInfo = i) });
  g2.cmd("exit");
  for (const end = Date.now() + 5000; !g2.host.failure && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(g2.host.failure, { reason: "exit", message: "the module exited with status 3" });
});

// ------------------------------------------------------------ TLS

function selfSigned() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "peri-js-tls-"));
  const key = path.join(dir, "key.pem");
  const cert = path.join(dir, "cert.pem");
  const r = spawnSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost", "-days", "1", "-keyout", key, "-out", cert], { encoding: "utf8" });
  if (r.status !== 0) return null;
  return { key: fs.readFileSync(key), cert: fs.readFileSync(cert) };
}

test("TLS: the host's trust store, the server name, and a typed tls failure", async (t) => {
  const pair = selfSigned();
  if (missing(t, !pair && "openssl is missing")) return;
  const { default: tls } = await import("node:tls");
  const srv = await new Promise((resolve) => {
    const s = tls.createServer(pair, (c) => c.on("data", (d) => c.write("tls:" + d)).on("error", () => {}));
    s.on("tlsClientError", () => {});
    s.listen(0, "127.0.0.1", () => resolve(s));
  });
  t.after(() => srv.close());
  const port = srv.address().port;
  // trusted: the host's trust store holds the certificate; SNI and name "localhost"
  const g = await guest(t, { allow: [`localhost:${port}`, `127.0.0.1:${port}`], tls: { ca: pair.cert } });
  if (!g) return;
  g.cmd(`open localhost ${port} localhost`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${h} 0 $`));
  g.cmd(`write ${h} hello`);
  await g.expect(new RegExp(`^data ${h} tls:hello$`));
  g.cmd(`close ${h}`);
  await g.expect(new RegExp(`^ev 3 ${h} 0 $`));
  // the certificate does not name the server name asked for
  g.cmd(`open 127.0.0.1 ${port} other.example`);
  const [, h2] = await g.expect(/^open 0 (\d+)$/);
  await g.expect(new RegExp(`^ev 1 ${h2} ${PortError.TLS} `));
  await g.expect(new RegExp(`^ev 3 ${h2} ${PortError.TLS} `));
  // not trusted: the default trust store does not hold a self-signed certificate
  const g2 = await guest(t, { allow: [`localhost:${port}`] });
  g2.cmd(`open localhost ${port} localhost`);
  const [, h3] = await g2.expect(/^open 0 (\d+)$/);
  await g2.expect(new RegExp(`^ev 1 ${h3} ${PortError.TLS} `));
  await g2.expect(new RegExp(`^ev 3 ${h3} ${PortError.TLS} `));
});

// A server that speaks in the clear until the client asks "STARTTLS", answers "S" (and,
// in the modes below, misbehaves), then does TLS on the same connection.
async function starttlsServer(t, pair, mode) {
  const { default: tls } = await import("node:tls");
  const srv = await server((c) => {
    c.once("data", (d) => {
      if (String(d) !== "STARTTLS") return c.destroy();
      if (mode === "garbage") return c.write("Sinjected");
      c.write("S");
      if (mode === "stall") return;
      const ts = new tls.TLSSocket(c, { isServer: true, key: pair.key, cert: pair.cert });
      ts.on("error", () => {});
      ts.on("data", (x) => ts.write("tls:" + x));
    });
  });
  t.after(() => srv.close());
  return srv.address().port;
}

test("starttls: an upgrade after a clear answer; trust, clear bytes left unread, deadline", async (t) => {
  const pair = selfSigned();
  if (missing(t, !pair && "openssl is missing")) return;
  const port = await starttlsServer(t, pair, "ok");
  const g = await guest(t, { allow: [`localhost:${port}`], tls: { ca: pair.cert } });
  if (!g) return;
  g.cmd(`open localhost ${port}`);
  const [, h] = await g.expect(/^open 0 (\d+)$/);
  g.cmd(`starttls ${h} localhost`);
  await g.expect(new RegExp(`^starttls ${PortError.INVALID}$`)); // not open yet
  await g.expect(new RegExp(`^ev 1 ${h} 0 $`));
  g.cmd(`write ${h} STARTTLS`);
  await g.expect(new RegExp(`^data ${h} S$`));
  g.cmd(`starttls ${h} localhost`);
  await g.expect(/^starttls 0$/);
  g.cmd(`write ${h} hello`); // queued during the handshake, sent over TLS after it
  await g.expect(/^write 0$/);
  await g.expect(new RegExp(`^ev ${EventKind.TLS} ${h} 0 $`));
  await g.expect(new RegExp(`^data ${h} tls:hello$`));
  g.cmd(`starttls ${h}`);
  await g.expect(new RegExp(`^starttls ${PortError.INVALID}$`)); // already TLS
  g.cmd(`close ${h}`);
  await g.expect(new RegExp(`^ev 3 ${h} 0 $`));

  // not trusted: the TLS event carries tls, then the stream settles with it
  const g2 = await guest(t, { allow: [`localhost:${port}`] });
  g2.cmd(`open localhost ${port}`);
  const [, h2] = await g2.expect(/^open 0 (\d+)$/);
  await g2.expect(new RegExp(`^ev 1 ${h2} 0 $`));
  g2.cmd(`write ${h2} STARTTLS`);
  await g2.expect(new RegExp(`^data ${h2} S$`));
  g2.cmd(`starttls ${h2}`);
  await g2.expect(/^starttls 0$/);
  await g2.expect(new RegExp(`^ev ${EventKind.TLS} ${h2} ${PortError.TLS} `));
  await g2.expect(new RegExp(`^ev 3 ${h2} ${PortError.TLS} `));

  // clear bytes still unread when the upgrade is asked: refused at once
  const gport = await starttlsServer(t, pair, "garbage");
  const g3 = await guest(t, { allow: [`localhost:${gport}`], tls: { ca: pair.cert } });
  g3.cmd(`open localhost ${gport}`);
  const [, h3] = await g3.expect(/^open 0 (\d+)$/);
  await g3.expect(new RegExp(`^ev 1 ${h3} 0 $`));
  g3.cmd(`hold ${h3}`);
  g3.cmd(`write ${h3} STARTTLS`);
  await g3.expect(/^write 0$/);
  const buffered = () => g3.host.ports.streamStats(Number(h3)).buffered;
  for (const end = Date.now() + 5000; buffered() < 9 && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  assert.equal(buffered(), 9);
  g3.cmd(`starttls ${h3} localhost`);
  await g3.expect(new RegExp(`^starttls ${PortError.TLS}$`));
  g3.cmd(`auto ${h3}`);
  await g3.expect(new RegExp(`^data ${h3} Sinjected$`)); // left as it was, in the clear

  // a handshake that never ends: timeout, never a close
  const sport = await starttlsServer(t, pair, "stall");
  const g4 = await guest(t, { allow: [`localhost:${sport}`], tls: { ca: pair.cert }, limits: { connectTimeoutMs: 300 } });
  g4.cmd(`open localhost ${sport}`);
  const [, h4] = await g4.expect(/^open 0 (\d+)$/);
  await g4.expect(new RegExp(`^ev 1 ${h4} 0 $`));
  g4.cmd(`write ${h4} STARTTLS`);
  await g4.expect(new RegExp(`^data ${h4} S$`));
  const t0 = Date.now();
  g4.cmd(`starttls ${h4}`);
  await g4.expect(/^starttls 0$/);
  await g4.expect(new RegExp(`^ev ${EventKind.TLS} ${h4} ${PortError.TIMEOUT} .*starttls`));
  await g4.expect(new RegExp(`^ev 3 ${h4} ${PortError.TIMEOUT} `));
  assert.ok(Date.now() - t0 >= 250);
});

test("bytes written while the name still resolves are sent once connected", async (t) => {
  const srv = await server((c) => c.on("data", (d) => c.write("echo:" + d)));
  t.after(() => srv.close());
  const port = srv.address().port;
  const g = await guest(t, { allow: [`localhost:${port}`] });
  if (!g) return;
  g.host.input(`open localhost ${port}\nwrite 1 early\n`);
  await g.expect(/^open 0 1$/);
  await g.expect(/^write 0$/);
  await g.expect(/^data 1 echo:early$/);
});

test("events queued behind a trap still settle: close-all resolves", async (t) => {
  const g = await guest(t, { onExit() {} });
  if (!g) return;
  g.cmd("timer 100000");
  await g.expect(/^timer 0 \d+$/);
  g.cmd("trap"); // queued first: the module dies before the closed event below is delivered
  const report = await Promise.race([
    g.host.ports.closeAll(),
    new Promise((_, reject) => setTimeout(() => reject(new Error("close-all never settled")), 3000)),
  ]);
  assert.deepEqual(report.closed, { streams: 0, resolutions: 0, timers: 1 });
  assert.equal(g.host.failure.reason, "trap");
  assert.throws(() => g.host.input("now\n"), (e) => e instanceof WasmHostError && e.reason === "dead");
});
