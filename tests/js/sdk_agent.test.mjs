// sdk_agent.test.mjs — the SDK against the real agent (build/peri-agent acp, through
// the stdio helper) and the mock model: initialize, new, prompt with updates, close,
// list, load (history replayed), resume (none), close while a turn hangs (bounded),
// and the stream transport over a child's pipes.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { Sandbox, stdioTransportFactory, streamTransport, SessionCloseIncompleteError, TransportError } from "../../sdk/js/index.mjs";
import { agentBinary, havePython, missing, startMockModel } from "./harness.mjs";

function setup(mockBase) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "peri-js-sdk-"));
  const home = path.join(tmp, "home");
  fs.mkdirSync(path.join(home, ".peri"), { recursive: true });
  fs.writeFileSync(
    path.join(home, ".peri", "settings.json"),
    JSON.stringify({
      model: "openai:js-model",
      closeGraceMs: 100,
      maxRetries: 0,
      providers: { openai: { baseUrl: `${mockBase}/v1`, apiKey: "k" } },
    }),
  );
  const env = { HOME: home, PATH: process.env.PATH ?? "/usr/bin:/bin" };
  return { tmp, home, env, db: path.join(tmp, "sessions.db"), work: path.join(tmp, "work", "not-yet-there") };
}

test("the SDK drives peri-agent acp over stdio", async (t) => {
  const bin = agentBinary();
  if (missing(t, !bin && "build/peri-agent is not built")) return;
  if (missing(t, !havePython() && "python3 is missing")) return;
  const mock = await startMockModel();
  t.after(() => mock.stop());
  const { env, db, work } = setup(mock.base);
  const sb = new Sandbox({
    transportFactory: stdioTransportFactory({ peri: bin, env, exitWaitMs: 5000 }),
    storeLocator: db,
    machineId: "aaaaaaaa-1111-4111-8111-000000000001",
  });
  const agent = await sb.connect(work);
  const { agentInfo } = await agent.initialize();
  assert.match(agentInfo, /peri-c/);

  await mock.script([{ text: ["Hel", "lo"] }]);
  let text = "";
  const s = await agent.newSession({ onUpdate: (u) => { if (u.kind === "agent_message_chunk") text += u.text; } });
  assert.equal(await s.prompt("hi"), "end_turn");
  assert.equal(text, "Hello");
  const reqs = await mock.requests();
  assert.equal(reqs.at(-1).body.model, "js-model");
  await s.close(3000);
  assert.equal(s.closed, true);
  await s.close(); // a no-op

  const list = await agent.listSessions();
  assert.ok(list.sessions.some((x) => x.sessionId === s.id), "the session is listed");

  let replay = "";
  const ls = await agent.loadSession(s.id, { onUpdate: (u) => { if (u.kind === "agent_message_chunk") replay += u.text; } });
  assert.equal(replay, "Hello", "load replays the history before it resolves");
  await ls.close();
  let resumed = 0;
  const rs = await agent.resumeSession(s.id, { onUpdate: (u) => { if (u.kind === "agent_message_chunk") resumed++; } });
  assert.equal(resumed, 0, "resume replays nothing");
  await mock.script([{ text: "again" }]);
  assert.equal(await rs.prompt("more"), "end_turn");
  await rs.close();

  // close while the model hangs mid-stream, without a cancel first: it settles within
  // the budget or says incomplete, never hangs
  await mock.script([{ text: ["x", "y"], hang: true, hang_after: 2 }]);
  let chunks = 0;
  const s2 = await agent.newSession({ onUpdate: (u) => { if (u.kind === "agent_message_chunk") chunks++; } });
  const turn = s2.prompt("hang");
  for (const end = Date.now() + 10000; chunks < 1 && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  assert.ok(chunks >= 1);
  const t0 = Date.now();
  try {
    await s2.close(300);
  } catch (e) {
    assert.ok(e instanceof SessionCloseIncompleteError, String(e));
    assert.equal(s2.closed, false);
    await s2.close(5000);
  }
  assert.ok(Date.now() - t0 < 300 + 10000);
  assert.equal(await turn, "cancelled");

  await agent.disconnect(); // the child sees EOF, settles and is reaped
  await assert.rejects(agent.request("session/list"), TransportError);
});

test("streamTransport over a child's pipes; a missing command is a TransportError", async (t) => {
  const bin = agentBinary();
  if (missing(t, !bin && "build/peri-agent is not built")) return;
  const { env, db, work } = setup("http://127.0.0.1:9");
  const child = spawn(bin, ["acp", "--cwd", work, "--db", db, "--machine-id", "m-stream"], { env, stdio: ["pipe", "pipe", "ignore"] });
  const sb = new Sandbox({ transportFactory: () => streamTransport(child.stdout, child.stdin) });
  const agent = await sb.connect(work);
  assert.match((await agent.initialize()).agentInfo, /peri-c/);
  await agent.disconnect();
  await new Promise((r) => child.once("exit", r));

  const none = new Sandbox({ transportFactory: stdioTransportFactory({ argv: ["/nonexistent/peri", "acp"] }) });
  await assert.rejects(none.connect("/w"), (e) => e instanceof TransportError && /^cannot start \/nonexistent\/peri: /.test(e.message));
});
