// port_guest.test.mjs — conformance of the Node host with the project's own test guest
// (build/tests/wasmhost/port_guest.wasm, source tests/wasmhost/port_guest.c; docs/
// wasm-host.md, "The test guest"): the same start object, allow-list and connect
// deadline as the engine's run (tests/wasmhost/test_wasmhost.c, wasmhost.abi), against
// real local servers (echo, refused, hang/silent), checking the same lines and the same
// settlement. The guest's path comes from $PERI_PORT_GUEST (set by CTest), else the
// build directory; without the file the tests fail under CI=true and are skipped
// otherwise.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { WasmHost } from "../../sdk/js/wasm-host.mjs";
import { BUILD, missing } from "./harness.mjs";

const GUEST = process.env.PERI_PORT_GUEST || path.join(BUILD, "tests/wasmhost/port_guest.wasm");

function listen(onConn) {
  return new Promise((resolve) => {
    const s = net.createServer(onConn);
    s.listen(0, "127.0.0.1", () => resolve(s));
  });
}

/** The engine test's servers: echo, hang (accepts, never answers) and a refused port. */
async function servers(t) {
  const held = [];
  const echo = await listen((c) => {
    c.on("data", (d) => c.write(d));
    c.on("end", () => c.end());
    c.on("error", () => {});
  });
  const hang = await listen((c) => {
    held.push(c);
    c.on("error", () => {});
  });
  const gone = await listen(() => {});
  const refused = gone.address().port;
  await new Promise((r) => gone.close(r)); // nothing listens there now: refused
  t.after(() => {
    for (const c of held) c.destroy();
    echo.close();
    hang.close();
  });
  return { echo: echo.address().port, hang: hang.address().port, refused };
}

/** Starts the guest as the engine test does; lines() and expect(line) see what it sends. */
async function startGuest(t) {
  if (missing(t, !fs.existsSync(GUEST) && `${GUEST} is missing (clang, wasm-ld or wasi-libc absent at build time)`)) return null;
  const p = await servers(t);
  const sent = [];
  const logs = [];
  let partial = "";
  const waiters = [];
  const host = await WasmHost.start({
    moduleUrl: GUEST,
    checkStart: false, // the guest's own start object, not the agent's
    start: { echo: p.echo, refused: p.refused, hang: p.hang, silent: p.hang },
    allow: [`127.0.0.1:${p.echo}`, `127.0.0.1:${p.hang}`, `127.0.0.1:${p.refused}`, `localhost:${p.echo}`, "nothing.invalid:1"],
    limits: { connectTimeoutMs: 400 },
    send: (b) => {
      partial += Buffer.from(b).toString("utf8");
      let i;
      while ((i = partial.indexOf("\n")) >= 0) {
        sent.push(partial.slice(0, i));
        partial = partial.slice(i + 1);
      }
      if (partial.startsWith("echo:")) {
        sent.push(partial); // client input comes back without a newline
        partial = "";
      }
      for (const w of waiters.splice(0)) w();
    },
    onLog: (level, text) => logs.push([level, text]),
  });
  t.after(() => host.close({ budgetMs: 100 }));
  const has = (line) => sent.some((l) => l.includes(line));
  const expect = async (line, ms = 5000) => {
    const end = Date.now() + ms;
    while (!has(line)) {
      if (Date.now() > end) throw new Error(`no line '${line}' in:\n${sent.join("\n")}`);
      await new Promise((r) => {
        waiters.push(r);
        setTimeout(r, 50);
      });
    }
  };
  const pos = (line) => {
    const i = sent.findIndex((l) => l.includes(line));
    assert.ok(i >= 0, `no line '${line}'`);
    return i;
  };
  return { host, sent, logs, has, expect, pos };
}

test("port_guest: every import's outcome, as on Peri-C's engine; peri_close settles", async (t) => {
  const g = await startGuest(t);
  if (!g) return;
  await g.expect("hang closed timeout");
  await g.expect("echo read [hello through the port]");
  await g.expect("t-late timer ok");
  await g.expect("invalid resolved not_found");
  await g.expect("resolve resolved ok");
  for (const line of [
    "clock ok",
    "echo open ok",
    "echo write ok",
    "echo shutdown ok",
    "echo opened ok",
    "echo closed ok",
    "t-cancel cancel ok",
    "t-cancel timer cancelled",
    "t-early timer ok",
    "refused open ok",
    "refused opened refused",
    "refused closed refused",
    "hang opened timeout",
    "silent starttls invalid",
    "silent opened ok",
    "denied open denied",
  ])
    await g.expect(line, 2000);
  assert.ok(g.has("resolve addresses") && (g.has("first 127.0.0.1") || g.has("first ::1")), g.sent.join("\n"));
  assert.ok(g.pos("t-cancel timer cancelled") < g.pos("t-early timer ok"));
  assert.ok(g.pos("t-early timer ok") < g.pos("t-late timer ok"));
  assert.ok(g.pos("hang opened timeout") < g.pos("hang closed timeout"));
  assert.ok(g.logs.some(([, text]) => text === "port_guest starting"));
  // client input goes back to the client
  g.host.input("hi there");
  await g.expect("echo:hi there");
  assert.equal(g.host.ports.pending, 1); // the silent stream
  // the module's close: it closes the silent stream and reports once it settled
  const report = await g.host.close({ budgetMs: 3000 });
  assert.ok(g.has("silent closed ok"));
  assert.equal(report.outcome, "settled");
  assert.deepEqual(report.module, { handles: 10, open: 0 }); // ten tracked, the denied one included
  assert.equal(g.host.ports.pending, 0);
  assert.deepEqual(report.ports.total, { streams: 4, resolutions: 2, timers: 3 }); // echo, refused, hang, silent
  assert.deepEqual(report.ports.closed, { streams: 0, resolutions: 0, timers: 0 }); // nothing forced by the host
  assert.throws(() => g.host.input("x"), /input after close/);
});

test("port_guest: the host closes every port; each settles with closed, nothing else", async (t) => {
  const g = await startGuest(t);
  if (!g) return;
  const closeAll = g.host.ports.closeAll();
  await g.expect("silent closed closed", 3000);
  await g.expect("hang closed closed", 3000);
  await g.expect("t-late timer closed", 3000);
  const ports = await closeAll;
  const forced = ports.closed.streams + ports.closed.resolutions + ports.closed.timers;
  assert.ok(forced >= 5, JSON.stringify(ports));
  assert.equal(g.host.ports.pending, 0);
  assert.ok(!g.has("hang opened"), g.sent.join("\n")); // closed by the host: only the settling event
  const report = await g.host.close({ budgetMs: 3000 });
  assert.equal(report.outcome, "settled");
  assert.deepEqual(report.module, { handles: 10, open: 0 }); // ten tracked, the denied one included // nothing was left: the report came at once
});
