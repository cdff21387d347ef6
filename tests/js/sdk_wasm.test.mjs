// sdk_wasm.test.mjs — the whole chain in one process: Sandbox → wasmTransportFactory →
// WasmHost → a tiny ACP agent module (tests/js/acp_guest.c) → back: initialize, new,
// prompt (an update, the answer after a timer of the host's port), the bounded close
// replaying -32010 through the module, and disconnect closing the host (settled).
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { Sandbox, wasmTransportFactory, SessionCloseIncompleteError } from "../../sdk/js/index.mjs";
import { REPO, missing } from "./harness.mjs";

function build() {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "peri-js-acp-")), "acp.wasm");
  const r = spawnSync("clang", ["--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-o", out, path.join(REPO, "tests/js/acp_guest.c")]);
  return r.status === 0 ? out : null;
}

test("the SDK over the WebAssembly host, end to end", async (t) => {
  const wasm = build();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  let transport;
  const factory = wasmTransportFactory({ moduleUrl: wasm, start: { settings: {} } });
  const sb = new Sandbox({
    transportFactory: async (c) => (transport = await factory(c)),
    storeLocator: "postgresql://db/peri",
    machineId: "aaaaaaaa-0000-4000-8000-00000000000a",
  });
  const agent = await sb.connect("/remote/work");
  assert.equal((await agent.initialize()).agentInfo, "guest-acp 0");
  let text = "";
  const s = await agent.newSession({ onUpdate: (u) => (text += u.text ?? "") });
  assert.equal(s.id, "g1");
  const t0 = performance.now();
  assert.equal(await s.prompt("ping"), "end_turn");
  assert.ok(performance.now() - t0 >= 19, "the answer waited for the host's timer");
  assert.equal(text, "pong");
  // the module answers -32010 twice: budget 0 is one attempt (incomplete), then a
  // replaying close settles
  await assert.rejects(s.close(0), (e) => e instanceof SessionCloseIncompleteError && e.message === "Session close is incomplete: guest settling");
  assert.equal(s.closed, false);
  await s.close(3000);
  assert.equal(s.closed, true);
  await agent.disconnect();
  const report = await transport.close(); // the same operation disconnect ran
  assert.equal(report.outcome, "settled");
  assert.deepEqual(report.module, { sessions: 1 });
  assert.equal(report.ports.settled, true);
});
