// sdk_contract.test.mjs — the SDK contracts against a scripted fake agent: the required
// transportFactory, the protocol version check, callbacks, and every rule of the
// bounded session close (the same table as tests/sdk/test_sdk.c).
import test from "node:test";
import assert from "node:assert/strict";
import {
  Sandbox,
  ArgumentError,
  RpcError,
  ProtocolError,
  TimeoutError,
  TransportError,
  StateError,
  SessionCloseIncompleteError,
  SdkError,
  PSDK_RPC_CLOSE_INCOMPLETE,
  CLOSE_BUDGET_DEFAULT_MS,
  CLOSE_REPLAY_MS,
  Decision,
} from "../../sdk/js/index.mjs";
import { fakeAgent, standardScript } from "./fake_agent.mjs";

async function connect(script, options = {}) {
  const fake = fakeAgent(script);
  const sb = new Sandbox({ transportFactory: () => fake.transport, ...options });
  const agent = await sb.connect("/remote/work");
  return { fake, agent };
}

const closes = (fake) => fake.sent.filter((s) => s.msg.method === "session/close");

test("constants are the C SDK's", () => {
  assert.equal(PSDK_RPC_CLOSE_INCOMPLETE, -32010);
  assert.equal(CLOSE_BUDGET_DEFAULT_MS, 3000);
  assert.equal(CLOSE_REPLAY_MS, 50);
});

test("transportFactory is required, with the contract's text", () => {
  for (const bad of [undefined, null, {}, { transportFactory: "peri acp" }]) {
    assert.throws(
      () => new Sandbox(bad),
      (e) => e instanceof ArgumentError && e instanceof SdkError && e.status === "ARG" && e.code === 1 &&
        e.message === "transportFactory is required",
    );
  }
});

test("answerTimeoutMs must be a usable number of milliseconds", () => {
  const transportFactory = () => null;
  for (const bad of ["10", Infinity, NaN, 2 ** 31])
    assert.throws(() => new Sandbox({ transportFactory, answerTimeoutMs: bad }), (e) =>
      e instanceof ArgumentError && e.message === "answerTimeoutMs must be a number of milliseconds up to 2147483647");
  assert.equal(new Sandbox({ transportFactory, answerTimeoutMs: 0 }).answerTimeoutMs, 30000);
  assert.throws(() => new Sandbox({ transportFactory, machineId: 5 }), /machineId must be a string when given/);
});

test("the factory gets the path and the host inputs verbatim", async () => {
  let got;
  const fake = fakeAgent(standardScript(() => {}));
  const sb = new Sandbox({
    transportFactory: (c) => ((got = c), fake.transport),
    storeLocator: "postgresql://db/peri",
    credential: "pw",
    machineId: "m-1",
  });
  await sb.connect("./not/../resolved");
  assert.deepEqual({ ...got }, {
    path: "./not/../resolved",
    storeLocator: "postgresql://db/peri",
    credential: "pw",
    machineId: "m-1",
  });
});

test("a factory that fails or returns no transport is a TransportError", async () => {
  const sb = new Sandbox({ transportFactory: () => { throw new Error("no route"); } });
  await assert.rejects(sb.connect("/w"), (e) => e instanceof TransportError && e.message === "factory failed: no route");
  const sb2 = new Sandbox({ transportFactory: () => ({}) });
  await assert.rejects(sb2.connect("/w"), TransportError);
});

test("initialize: version 1, the machine id announced; another version is refused", async () => {
  let params;
  const { agent } = await connect(
    standardScript(() => {}, (msg) => { if (msg.method === "initialize") params = msg.params; return false; }),
    { machineId: "mid-7" },
  );
  const info = await agent.initialize();
  assert.equal(info.agentInfo, "fake 1.0");
  assert.equal(params.protocolVersion, 1);
  assert.equal(params.clientCapabilities._meta["peri.machineId"], "mid-7");
  for (const [pv, got] of [[2, "2"], ["1", "a non-integer"], [undefined, "none"]]) {
    const { agent: a2 } = await connect((msg, io) => io.reply(pv === undefined ? {} : { protocolVersion: pv }));
    await assert.rejects(a2.initialize(), (e) =>
      e instanceof ProtocolError && e.message === `unsupported ACP protocol version ${got} (this SDK speaks 1)`);
  }
});

test("updates reach their session in order; permissions are answered", async () => {
  const { agent } = await connect(
    standardScript(() => {}, (msg, io) => {
      if (msg.method !== "session/prompt") return false;
      io.push({ jsonrpc: "2.0", method: "session/update",
        params: { sessionId: "s1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hel" } } } });
      io.push({ jsonrpc: "2.0", method: "session/update",
        params: { sessionId: "other", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "X" } } } });
      io.push({ jsonrpc: "2.0", id: "p1", method: "session/request_permission",
        params: { sessionId: "s1", toolCall: { toolCallId: "t1", title: "run" },
          options: [{ optionId: "no", kind: "reject_once" }, { optionId: "yes", kind: "allow_once" }] } });
      io.push({ jsonrpc: "2.0", method: "session/update",
        params: { sessionId: "s1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "lo" } } } });
      setTimeout(() => io.reply({ stopReason: "end_turn" }), 20);
      return true;
    }),
  );
  let text = "";
  const asked = [];
  const s = await agent.newSession({
    onUpdate: (u) => { if (u.kind === "agent_message_chunk") text += u.text; },
    onPermission: async (r) => { asked.push(r.toolCallId); return "allow"; },
  });
  assert.equal(s.id, "s1");
  assert.equal(await s.prompt("hi"), "end_turn");
  assert.equal(text, "Hello");
  assert.deepEqual(asked, ["t1"]);
});

// One prompt whose permission request has these params, answered by a handler that
// always decides `decision`: the SDK's answer (the outcome object) and what the handler saw.
async function answerTo(params, decision) {
  let prompt;
  let answer;
  let asked;
  const { agent } = await connect(
    standardScript(() => {}, (msg, io) => {
      if (msg.method === "session/prompt") {
        prompt = io;
        io.push({ jsonrpc: "2.0", id: "p1", method: "session/request_permission", params });
        return true;
      }
      if (msg.id === "p1" && msg.method === undefined) {
        answer = msg.result.outcome;
        prompt.reply({ stopReason: "end_turn" });
        return true;
      }
      return false;
    }),
  );
  const s = await agent.newSession({ onPermission: async (r) => ((asked = r), decision) });
  assert.equal(await s.prompt("hi"), "end_turn");
  await agent.disconnect();
  return { answer, trustRequest: asked.trustRequest };
}

// The agent's project-trust question: only trust_project (kind allow_always), no allow_once.
const TRUST_REQUEST = {
  sessionId: "s1",
  toolCall: { toolCallId: "peri-trust-0123", title: "Trust?", _meta: { "peri.trustRequest": { project: "/p" } } },
  options: [{ optionId: "trust_project", kind: "allow_always" }, { optionId: "reject_once", kind: "reject_once" }],
};
// A tool's request as the agent sends it, an "always" option first.
const TOOL_REQUEST = {
  sessionId: "s1",
  toolCall: { toolCallId: "c1", title: "write x" },
  options: [
    { optionId: "always", kind: "allow_always" },
    { optionId: "once", kind: "allow_once" },
    { optionId: "always_project", kind: "allow_always" },
    { optionId: "no", kind: "reject_once" },
    { optionId: "never", kind: "reject_always" },
  ],
};
const selected = (optionId) => ({ outcome: "selected", optionId });

test("ALLOW is allow once: never an 'always' option, never a project's trust", async () => {
  assert.deepEqual(await answerTo(TRUST_REQUEST, Decision.ALLOW), { answer: selected("reject_once"), trustRequest: true });
  assert.deepEqual(await answerTo(TOOL_REQUEST, Decision.ALLOW), { answer: selected("once"), trustRequest: false });
  // no allow_once offered (and no trust marker): rejected, not "always"
  const alwaysOnly = { sessionId: "s1", toolCall: { toolCallId: "c1" },
    options: [{ optionId: "always", kind: "allow_always" }, { optionId: "never", kind: "reject_always" }] };
  assert.deepEqual((await answerTo(alwaysOnly, Decision.ALLOW)).answer, selected("never"));
  // a trust request that also offered allow_once is still not answered by ALLOW
  const trustWithOnce = { sessionId: "s1", toolCall: { toolCallId: "c1", _meta: { "peri.trustRequest": {} } },
    options: [{ optionId: "once", kind: "allow_once" }, { optionId: "no", kind: "reject_once" }] };
  assert.deepEqual(await answerTo(trustWithOnce, Decision.ALLOW), { answer: selected("no"), trustRequest: true });
  // nothing to reject with: cancelled
  const nothing = { sessionId: "s1", toolCall: { toolCallId: "c1" }, options: [{ optionId: "always", kind: "allow_always" }] };
  assert.deepEqual((await answerTo(nothing, Decision.ALLOW)).answer, { outcome: "cancelled" });
});

test("only TRUST_PROJECT accepts a trust request, and it accepts nothing else", async () => {
  assert.deepEqual((await answerTo(TRUST_REQUEST, Decision.TRUST_PROJECT)).answer, selected("trust_project"));
  assert.deepEqual((await answerTo(TOOL_REQUEST, Decision.TRUST_PROJECT)).answer, selected("no"));
  assert.deepEqual((await answerTo(TRUST_REQUEST, Decision.REJECT)).answer, selected("reject_once"));
  assert.deepEqual((await answerTo(TRUST_REQUEST, Decision.CANCELLED)).answer, { outcome: "cancelled" });
  assert.deepEqual((await answerTo(TOOL_REQUEST, Decision.REJECT)).answer, selected("no"));
});

test("an unknown request from the agent is answered Method not found", async () => {
  const fake = fakeAgent(() => {});
  const sb = new Sandbox({ transportFactory: () => fake.transport });
  await sb.connect("/w");
  fake.push({ jsonrpc: "2.0", id: 9, method: "fs/read_text_file", params: {} });
  await new Promise((r) => setTimeout(r, 20));
  const ans = fake.sent.find((s) => s.msg.id === 9);
  assert.equal(ans.msg.error.code, -32601);
  assert.equal(ans.msg.error.message, "Method not found");
});

test("answer timeout is a TimeoutError; a transport end fails waiting calls", async () => {
  const { agent } = await connect(() => {}, { answerTimeoutMs: 50 });
  await assert.rejects(agent.request("x/y"), (e) => e instanceof TimeoutError && e.message === "no answer to x/y within 50 ms");
  const { fake, agent: a2 } = await connect(() => {});
  const p = a2.request("x/y");
  fake.end();
  await assert.rejects(p, (e) => e instanceof TransportError && e.message === "transport closed: end of stream");
  await assert.rejects(a2.request("x/z"), TransportError);
});

test("bad arguments are ArgumentErrors and send nothing", async () => {
  const { fake, agent } = await connect(standardScript(() => {}));
  await assert.rejects(agent.request(""), /a method is required/);
  await assert.rejects(agent.request("m", [1]), /params must be a JSON object/);
  await assert.rejects(agent.loadSession(""), /a session id is required/);
  await assert.rejects(agent.newSession({ onUpdate: 3 }), ArgumentError);
  const s = await agent.newSession();
  const before = fake.sent.length;
  for (const b of [-1, 1.5, Number.MAX_SAFE_INTEGER + 1, "10", NaN, Infinity]) {
    await assert.rejects(s.close(b), (e) => e instanceof ArgumentError &&
      e.message === `close budget must be a non-negative safe integer of milliseconds, got ${String(b)}`);
  }
  await assert.rejects(s.prompt(5), /a session and a text are required/);
  assert.equal(fake.sent.length, before);
});

test("close settles after replays; a closed session sends nothing; prompt is refused", async () => {
  let n = 0;
  const { fake, agent } = await connect(standardScript((msg, io) => {
    if (++n < 3) io.fail(PSDK_RPC_CLOSE_INCOMPLETE, "store settlement unknown");
    else io.reply({});
  }));
  const s = await agent.newSession();
  await s.close(3000);
  assert.equal(s.closed, true);
  assert.equal(closes(fake).length, 3);
  assert.deepEqual(closes(fake)[0].msg.params, { sessionId: "s1" });
  await s.close();
  assert.equal(closes(fake).length, 3);
  await assert.rejects(s.prompt("again"), (e) => e instanceof StateError && e.message === "the session is closed");
});

test("close cadence, exhaustion, and the state kept after an incomplete close", async () => {
  let settle = false;
  const { fake, agent } = await connect(standardScript((msg, io) =>
    settle ? io.reply({}) : io.fail(PSDK_RPC_CLOSE_INCOMPLETE, "turn still running")));
  const s = await agent.newSession();
  const t0 = performance.now();
  const err = await s.close(300).catch((e) => e);
  const el = performance.now() - t0;
  assert.ok(err instanceof SessionCloseIncompleteError);
  assert.equal(err.status, "SESSION_CLOSE_INCOMPLETE");
  assert.equal(err.code, 6);
  assert.equal(err.message, "Session close is incomplete: turn still running");
  assert.equal(err.causes.length, 1);
  assert.ok(err.causes[0] instanceof RpcError && err.causes[0].rpcCode === -32010);
  assert.ok(el >= 300 && el < 3000, `took ${el} ms`);
  const c = closes(fake);
  assert.ok(c.length >= 3 && c.length <= 8, `${c.length} attempts`);
  // every pause is min(50 ms, what remained of the budget), give or take a timer's ms
  for (let i = 1; i < c.length; i++) {
    const remaining = 300 - (c[i - 1].at - t0);
    assert.ok(c[i].at - c[i - 1].at >= Math.min(50, remaining) - 5,
      `a pause between attempts: ${c.map((x) => Math.round(x.at - t0))}`);
  }
  // incomplete keeps state: the session is open and the transport connected
  assert.equal(s.closed, false);
  assert.equal(agent.ended, false);
  settle = true;
  await s.close(0);
  assert.equal(s.closed, true);
});

test("the last pause is the remaining budget", async () => {
  const { fake, agent } = await connect(standardScript((msg, io) => io.fail(PSDK_RPC_CLOSE_INCOMPLETE, "later")));
  const s = await agent.newSession();
  const t0 = performance.now();
  await assert.rejects(s.close(70), SessionCloseIncompleteError);
  const el = performance.now() - t0;
  assert.ok(el >= 70 && el < 1000, `took ${el} ms`);
  // at 0, after a 50 ms pause, and at the budget's end: pauses end by the real clock,
  // so a timer firing early cannot buy more (a slow machine may allow only two)
  assert.ok(closes(fake).length >= 2 && closes(fake).length <= 3, `${closes(fake).length} attempts`);
});

test("budget 0 is exactly one attempt", async () => {
  const { fake, agent } = await connect(standardScript((msg, io) => io.fail(PSDK_RPC_CLOSE_INCOMPLETE, "nope")));
  const s = await agent.newSession();
  await assert.rejects(s.close(0), (e) => e instanceof SessionCloseIncompleteError && e.message === "Session close is incomplete: nope");
  assert.equal(closes(fake).length, 1);
});

test("another error is returned unchanged and not replayed", async () => {
  const { fake, agent } = await connect(standardScript((msg, io) => io.fail(-32602, "Unknown session s1", { sessionId: "s1" })));
  const s = await agent.newSession();
  const e = await s.close(1000).catch((x) => x);
  assert.ok(e instanceof RpcError && !(e instanceof SessionCloseIncompleteError));
  assert.equal(e.rpcCode, -32602);
  assert.equal(e.message, "Unknown session s1");
  assert.deepEqual(e.data, { sessionId: "s1" });
  assert.equal(closes(fake).length, 1);
  assert.equal(s.closed, false);
});

test("a different failure after an incomplete attempt keeps both causes", async () => {
  let n = 0;
  const { agent } = await connect(standardScript((msg, io) =>
    ++n === 1 ? io.fail(PSDK_RPC_CLOSE_INCOMPLETE, "settling") : io.fail(-32603, "store down")));
  const s = await agent.newSession();
  const e = await s.close(3000).catch((x) => x);
  assert.ok(e instanceof SessionCloseIncompleteError);
  assert.equal(e.message, "Session close is incomplete: store down");
  assert.equal(e.causes.length, 2);
  assert.equal(e.causes[0].rpcCode, -32010);
  assert.equal(e.causes[0].message, "settling");
  assert.equal(e.causes[1].rpcCode, -32603);
  assert.equal(e.cause, e.causes[1]);
});

test("a transport end during close is returned unchanged", async () => {
  const { agent } = await connect(standardScript((msg, io) => io.end()));
  const s = await agent.newSession();
  await assert.rejects(s.close(1000), (e) => e instanceof TransportError && e.message === "transport closed: end of stream");
});

test("concurrent closes share one operation: one request stream, one result", async () => {
  let n = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const { fake, agent } = await connect(standardScript((msg, io) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    setTimeout(() => {
      inFlight--;
      if (++n < 3) io.fail(PSDK_RPC_CLOSE_INCOMPLETE, "wait");
      else io.reply({});
    }, 10);
  }));
  const s = await agent.newSession();
  const results = await Promise.allSettled([s.close(), s.close(), s.close(2000)]);
  assert.deepEqual(results.map((r) => r.status), ["fulfilled", "fulfilled", "fulfilled"]);
  assert.equal(closes(fake).length, 3);
  assert.equal(maxInFlight, 1);
});

test("a settled close ends a waiting prompt as cancelled", async () => {
  const { agent } = await connect(standardScript((msg, io) => io.reply({}), (msg) => msg.method === "session/prompt"));
  const s = await agent.newSession();
  const p = s.prompt("long"); // the fake never answers prompts
  await new Promise((r) => setTimeout(r, 10));
  await s.close();
  assert.equal(await p, "cancelled");
});
