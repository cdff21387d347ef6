// sdk_client.mjs: a real ACP client - the client side of the official TypeScript SDK
// (@agentclientprotocol/sdk, pinned in tests/acp/sdk/package-lock.json, installed by
// scripts/deps.sh into a cache) - drives every editor feature against
// `peri acp` and tests/host/mock_model.py, for one model format.
//
// usage: node sdk_client.mjs PERI_BINARY MOCK_MODEL_PY openai|anthropic
// The SDK validates every frame the agent sends against its own ACP schema (zod), so a
// malformed update or result fails the test. Exit 0 = pass, 1 = fail, 77 = skipped
// (SDK not installed, outside CI; with CI=true a missing SDK is a failure).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [peri, mockPy, format] = process.argv.slice(2);
if (!peri || !mockPy || !["openai", "anthropic"].includes(format)) {
  console.error("usage: node sdk_client.mjs PERI MOCK_MODEL_PY openai|anthropic");
  process.exit(2);
}

const sdkDir =
  process.env.PERI_ACP_SDK_DIR ||
  path.join(process.env.PERI_NPM_CACHE ||
            path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "peri",
                      "npm"), "acp-sdk");
const entry = path.join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/unstable/acp.js");
if (!fs.existsSync(entry)) {
  const msg = `the ACP SDK is not installed at ${sdkDir} (run scripts/deps.sh)`;
  if (process.env.CI === "true") {
    console.log("FAIL sdk." + format + ": " + msg);
    process.exit(1);
  }
  console.log("SKIP: " + msg);
  process.exit(77);
}
const acp = await import(pathToFileURL(entry).href);
const M = acp.methods;

class Fail extends Error {}
function check(cond, msg) {
  if (!cond) throw new Fail(msg);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(pred, what, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    check(Date.now() < end, "timed out waiting for " + what);
    await sleep(20);
  }
}

// ---------------------------------------------------------------- environment

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "peri-sdk-"));
const home = path.join(tmp, "home");
const cwd = path.join(tmp, "work");
fs.mkdirSync(path.join(home, ".peri", "commands"), { recursive: true });
fs.mkdirSync(path.join(cwd, ".peri", "commands"), { recursive: true });
fs.mkdirSync(path.join(cwd, ".peri", "skills", "deploy"), { recursive: true });
fs.writeFileSync(path.join(cwd, "AGENTS.md"), "SDK-GUIDE: run make test before committing\n");
fs.writeFileSync(path.join(cwd, ".peri", "skills", "deploy", "SKILL.md"),
                 "---\nname: deploy\ndescription: Ship it\n---\nSKILL-BODY-42\n");
fs.writeFileSync(path.join(cwd, ".peri", "commands", "review.md"),
                 "---\ndescription: Review a file\nargument-hint: path\n---\nReview $ARGUMENTS now.\n");
fs.writeFileSync(path.join(home, ".peri", "commands", "hello.md"), "Say hello.\n");
fs.writeFileSync(path.join(cwd, "notes.txt"), "sdk-notes-99\n");

const portFile = path.join(tmp, "mock.port");
const mock = spawn("python3", [mockPy, "--port-file", portFile, "--quiet", "--timeout", "120",
                               "--parent-pid", String(process.pid)], { stdio: "ignore" });
await until(() => fs.existsSync(portFile), "mock model");
const mockUrl = "http://127.0.0.1:" + fs.readFileSync(portFile, "utf8").trim();
const mockScript = async (s) => {
  const r = await fetch(mockUrl + "/_script", { method: "POST", body: JSON.stringify(s) });
  check(r.ok, "mock script");
};
const mockRequests = async () => (await fetch(mockUrl + "/_requests")).json();

const models = format === "openai" ? ["openai:mock-a", "openai:mock-b"]
                                    : ["anthropic:claude-a", "anthropic:claude-b"];
const provider = format === "openai" ? { openai: { baseUrl: mockUrl + "/v1", apiKey: "k" } }
                                     : { anthropic: { baseUrl: mockUrl, apiKey: "k" } };
fs.writeFileSync(path.join(home, ".peri", "settings.json"), JSON.stringify({
  maxRetries: 0, model: models[0], providers: provider,
  models: [{ id: models[0], name: "Model A", contextWindow: 64000,
             price: { input: 1.0, output: 2.0 } },
           { id: models[1], name: "Model B" }],
}));
const env = { PATH: process.env.PATH, HOME: home };
for (const k of ["ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"])
  if (process.env[k]) env[k] = process.env[k];

// ---------------------------------------------------------------- the client

const updates = []; // {sessionId, update, t, meta}
const extNotes = []; // {method, params, t}
const permissionAsks = [];
let permissionAnswer = "allow_once";

function startAgent() {
  const child = spawn(peri, ["acp", "--db", path.join(tmp, "peri.db")],
                      { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp.client({ name: "peri-sdk-test" })
    .onRequest(M.client.session.requestPermission, async ({ params }) => {
      permissionAsks.push(params);
      return { outcome: { outcome: "selected", optionId: permissionAnswer } };
    })
    .onNotification(M.client.session.update, async ({ params }) => {
      updates.push({ sessionId: params.sessionId, update: params.update, t: Date.now(),
                     meta: params._meta || {} });
    })
    // Peri's extension notifications (_peri/turn_done, _peri/mcp_status), raw
    .onNotification("*", async (n) => {
      extNotes.push({ method: n.method, params: n.params, t: Date.now() });
    });
  return { child, stream, app, stderr: () => stderr };
}

const ups = (sid, tag, since = 0) =>
  updates.filter((u) => u.sessionId === sid && u.update.sessionUpdate === tag && u.t >= since)
    .map((u) => u.update);
const textOf = (sid, since = 0) =>
  ups(sid, "agent_message_chunk", since).map((u) => u.content.text).join("");
const lastBody = async () => (await mockRequests()).at(-1).body;
const json = (v) => JSON.stringify(v);
const text = (t) => [{ type: "text", text: t }];

async function expectError(p, code, what) {
  try {
    await p;
  } catch (e) {
    check(e.code === code, `${what}: code ${e.code} (${e.message}), want ${code}`);
    return e;
  }
  throw new Fail(what + ": no error");
}

// The user text the mock received last, whatever the format.
function userText(body) {
  const m = body.messages.at(-1);
  return typeof m.content === "string" ? m.content : json(m.content);
}
function systemText(body) {
  return format === "openai" ? body.messages[0].content : body.system;
}

async function session1(ctx) {
  // 1. initialize and session/new (modes, configOptions, available commands)
  const init = await ctx.request(M.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {},
    clientInfo: { name: "peri-sdk-test", version: "1" } });
  check(init.agentCapabilities.promptCapabilities.image === true, "image capability");
  check(init.agentCapabilities.sessionCapabilities.fork, "fork capability");
  check(json(init.authMethods.map((m) => m.id)) === json(["openai-api-key", "anthropic-api-key"]),
        "authMethods " + json(init.authMethods));
  check(init.agentCapabilities._meta["peri.methods"].includes("_peri/queue/list") &&
        init.agentCapabilities._meta["peri.turnDone"] === true, "extension flags");
  await expectError(ctx.request(M.agent.session.new, { cwd }), -32602, "new without mcpServers");
  const created = await ctx.request(M.agent.session.new, { cwd, mcpServers: [] });
  const sid = created.sessionId;
  check(created.modes.currentModeId === "default" && created.modes.availableModes.length === 4,
        "modes " + json(created.modes));
  const modelOpt = created.configOptions.find((o) => o.id === "model");
  check(modelOpt.currentValue === models[0] && modelOpt.options.length === 2, "model option");
  await until(() => ups(sid, "available_commands_update").length, "available_commands_update");
  const names = ups(sid, "available_commands_update")[0].availableCommands.map((c) => c.name);
  for (const n of ["compact", "clear", "init", "model", "mode", "review", "hello"])
    check(names.includes(n), "command " + n + " in " + json(names));

  // 2. guidance, skills, usage (window + cost)
  await mockScript([{ tool_calls: [{ id: "sk1", name: "skill", arguments: { name: "deploy" } }] },
                    { text: "guided", usage: { input: 1000, output: 1000 } }]);
  let r = await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("start") });
  check(r.stopReason === "end_turn", "first prompt " + json(r));
  let reqs = await mockRequests();
  check(systemText(reqs[0].body).includes("SDK-GUIDE") &&
        systemText(reqs[0].body).includes("- deploy: Ship it"), "guide/skills in system prompt");
  check(json(reqs[1].body.messages).includes("SKILL-BODY-42"), "skill body loaded");
  const usage = ups(sid, "usage_update").at(-1);
  check(usage.size === 64000 && usage.cost && usage.cost.currency === "USD" &&
        Math.abs(usage.cost.amount - 0.003) < 1e-9, "usage " + json(usage));

  // 3. plan mode refuses a write without asking; then back to default
  let t0 = Date.now();
  await ctx.request(M.agent.session.setMode, { sessionId: sid, modeId: "plan" });
  await until(() => ups(sid, "current_mode_update", t0).length, "current_mode_update");
  const asks0 = permissionAsks.length;
  await mockScript([{ tool_calls: [{ id: "w0", name: "write",
                                     arguments: { path: "x.txt", content: "x" } }] },
                    { text: "planned" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("plan it") });
  check(permissionAsks.length === asks0 && !fs.existsSync(path.join(cwd, "x.txt")),
        "plan mode wrote or asked");
  check(systemText(await lastBody()).includes("Plan mode"), "plan note");
  await ctx.request(M.agent.session.setMode, { sessionId: sid, modeId: "default" });

  // 4. permissions: allow_always remembered, reject_always remembered
  permissionAnswer = "allow_always";
  await mockScript([
    { tool_calls: [{ id: "w1", name: "write", arguments: { path: "a.txt", content: "1" } }] },
    { tool_calls: [{ id: "w2", name: "write", arguments: { path: "b.txt", content: "2" } }] },
    { text: "written" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("write two") });
  check(permissionAsks.length === asks0 + 1, "allow_always asked twice");
  const kinds = permissionAsks.at(-1).options.map((o) => o.kind);
  check(json(kinds) === json(["allow_once", "allow_always", "allow_always", "reject_once",
                              "reject_always"]), "option kinds " + json(kinds));
  check(fs.existsSync(path.join(cwd, "b.txt")), "second write");
  permissionAnswer = "reject_always";
  await mockScript([
    { tool_calls: [{ id: "s1", name: "shell", arguments: { command: "echo 1 > s1.txt" } }] },
    { tool_calls: [{ id: "s2", name: "shell", arguments: { command: "echo 2 > s2.txt" } }] },
    { text: "no shell" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("shell twice") });
  check(permissionAsks.length === asks0 + 2 && !fs.existsSync(path.join(cwd, "s2.txt")),
        "reject_always not remembered");

  // 5. plan updates from the todo tool
  await mockScript([{ tool_calls: [{ id: "td", name: "todo", arguments: { todos: [
    { content: "step one", status: "completed", priority: "high" },
    { content: "step two", status: "in_progress" }] } }] }, { text: "planned" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("todo") });
  const plan = ups(sid, "plan").at(-1);
  check(plan && plan.entries.length === 2 && plan.entries[1].status === "in_progress",
        "plan " + json(plan));

  // 6. an image in the native format; an unsupported block refused alone
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=";
  t0 = Date.now();
  await mockScript([{ text: "an image" }]);
  r = await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: [
    { type: "text", text: "look" }, { type: "image", mimeType: "image/png", data: png },
    { type: "audio", mimeType: "audio/wav", data: "AAAA" }] });
  check(r.stopReason === "end_turn", "image prompt");
  const last = (await lastBody()).messages.at(-1).content;
  if (format === "openai")
    check(last.some((p) => p.type === "image_url" &&
                           p.image_url.url === "data:image/png;base64," + png), "image_url part");
  else
    check(last.some((p) => p.type === "image" && p.source.type === "base64" &&
                           p.source.media_type === "image/png" && p.source.data === png),
          "anthropic image block");
  check(textOf(sid, t0).includes("audio"), "audio refusal not reported");

  // 7. model choice via set_config_option
  r = await ctx.request(M.agent.session.setConfigOption,
                        { sessionId: sid, configId: "model", value: models[1] });
  check(r.configOptions.find((o) => o.id === "model").currentValue === models[1], "set model");
  await mockScript([{ text: "from b" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("which model") });
  check((await lastBody()).model === models[1].split(":")[1], "model not switched");

  // 8. slash commands: user command, /compact (model summary), /mode, /model
  await mockScript([{ text: "reviewed" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("/review main.c") });
  check(userText(await lastBody()).includes("Review main.c now."), "user command");
  await mockScript([{ text: "SDK-SUMMARY of everything" }, { text: "after compact" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("/compact") });
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("next") });
  const afterCompact = json(await lastBody());
  check(afterCompact.includes("SDK-SUMMARY") && !afterCompact.includes("plan it"),
        "compact did not replace the history");
  t0 = Date.now();
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("/mode acceptEdits") });
  check(ups(sid, "current_mode_update", t0).at(-1).currentModeId === "acceptEdits", "/mode");
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("/model") });
  check(textOf(sid, t0).includes(models[0]), "/model listing");

  // 9. subagent: nested updates, child thread listed with its parent
  await mockScript([
    { tool_calls: [{ id: "tk", name: "task", arguments: { description: "look around",
                                                          prompt: "read notes.txt" } }] },
    { tool_calls: [{ id: "cr", name: "read", arguments: { path: "notes.txt" } }] },
    { text: "notes say sdk-notes-99" }, { text: "delegated" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("delegate") });
  const nested = ups(sid, "tool_call").filter((u) => u._meta &&
                                               u._meta["peri.parentToolCallId"] === "tk");
  check(nested.length === 1 && nested[0].toolCallId === "tk/cr", "nested " + json(nested));
  const childId = nested[0]._meta["peri.childSessionId"];
  // event identity on every update of every turn so far; the subagent's are its own
  const mine = updates.filter((u) => u.sessionId === sid);
  for (const u of mine)
    check(typeof u.meta["peri.sessionSeq"] === "number" && u.meta["peri.sessionEpoch"] === 1 &&
          typeof u.meta["peri.agentId"] === "string", "ids missing " + json(u.meta));
  const inTurns = mine.filter((u) => u.meta["peri.turnId"]);
  check(new Set(inTurns.map((u) => u.meta["peri.turnId"])).size >= 10 &&
        inTurns.every((u) => typeof u.meta["peri.attemptId"] === "string"), "turn ids");
  const childUps = mine.filter((u) => u.update.toolCallId === "tk/cr");
  check(childUps.length && childUps.every((u) => u.meta["peri.agentId"] === childId),
        "subagent agent id " + json(childUps.map((u) => u.meta)));
  // one terminal notification per prompt, each after that turn's updates (the SDK may
  // hand a notification to its handler after the answer that followed it on the wire)
  const turnIds = new Set(inTurns.map((u) => u.meta["peri.turnId"]));
  const doneOf = () =>
    extNotes.filter((n) => n.method === "_peri/turn_done" && n.params.sessionId === sid);
  await until(() => [...turnIds].every((t) => doneOf().some((d) => d.params.turnId === t)),
              "a _peri/turn_done for every turn");
  const done = doneOf();
  check([...turnIds].every((t) => done.filter((d) => d.params.turnId === t).length === 1),
        "more than one turn_done for a turn");
  for (const d of done) {
    const last = inTurns.filter((u) => u.meta["peri.turnId"] === d.params.turnId).at(-1);
    check(!last || last.meta["peri.sessionSeq"] < d.params._meta["peri.sessionSeq"],
          "turn_done before the turn's last update " + json(d.params));
  }
  const list = await ctx.request(M.agent.session.list, { cwd });
  const child = list.sessions.find((s) => s.sessionId === childId);
  check(child && child._meta["peri.parentSessionId"] === sid, "child not listed with parent");

  // 10. fork; fork while active is -32010; $/cancel_request of the running prompt
  const fork = await ctx.request(M.agent.session.fork, { sessionId: sid, cwd, mcpServers: [] });
  check(fork.sessionId !== sid && fork.modes.currentModeId === "acceptEdits", "fork result");
  await mockScript([{ text: "forked" }]);
  await ctx.request(M.agent.session.prompt, { sessionId: fork.sessionId, prompt: text("in fork") });
  check(json(await lastBody()).includes("SDK-SUMMARY"), "fork lacks the history");
  await mockScript([{ text: "never", hang: true }]);
  const abort = new AbortController();
  const running = ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("hang") },
                              { cancellationSignal: abort.signal }).catch((e) => e);
  await until(async () => json(await mockRequests()).includes("\"hang\""), "hanging call");
  await expectError(ctx.request(M.agent.session.fork, { sessionId: sid, cwd, mcpServers: [] }),
                    -32010, "fork while active");
  abort.abort();
  await running;
  await mockScript([{ text: "after cancel" }]);
  r = await Promise.race([
    ctx.request(M.agent.session.prompt, { sessionId: sid, prompt: text("still there?") }),
    sleep(8000).then(() => null)]);
  check(r && r.stopReason === "end_turn", "$/cancel_request did not stop the running prompt");
  return sid;
}

async function session2(ctx, sid) {
  await ctx.request(M.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION,
                                          clientCapabilities: {} });
  const t0 = Date.now();
  const r = await ctx.request(M.agent.session.load, { sessionId: sid, cwd, mcpServers: [] });
  check(r.modes.currentModeId === "acceptEdits", "mode not persisted " + json(r.modes));
  check(r.configOptions.find((o) => o.id === "model").currentValue === models[1],
        "model not persisted");
  check(ups(sid, "user_message_chunk", t0).length > 0, "no replay");
  const replay = updates.filter((u) => u.sessionId === sid && u.t >= t0);
  check(replay.every((u) => u.meta["peri.sessionEpoch"] === 2 && !u.meta["peri.turnId"]),
        "replay ids " + json(replay.slice(0, 2).map((u) => u.meta)));
  // the closing guard, through the real client: a fresh session closes at once
  const fresh = await ctx.request(M.agent.session.new, { cwd, mcpServers: [] });
  await ctx.request(M.agent.session.close, { sessionId: fresh.sessionId });
  await expectError(ctx.request(M.agent.session.setMode, { sessionId: fresh.sessionId,
                                                          modeId: "plan" }),
                    -32002, "set_mode on a closed session");
}

let failed = null;
const agents = [];
try {
  const a = startAgent();
  agents.push(a);
  const sid = await a.app.connectWith(a.stream, (ctx) => session1(ctx));
  a.child.stdin.end();
  const b = startAgent();
  agents.push(b);
  await b.app.connectWith(b.stream, (ctx) => session2(ctx, sid));
  b.child.stdin.end();
} catch (e) {
  failed = e;
}
for (const a of agents) {
  const exited = await Promise.race([
    new Promise((res) => a.child.exitCode !== null ? res(true) : a.child.once("exit", () => res(true))),
    sleep(5000).then(() => false)]);
  if (!exited) a.child.kill("SIGKILL");
  // a clean exit on EOF, and no sanitizer report (leaks show at exit under ASan)
  if (!failed && (!exited || a.child.exitCode !== 0))
    failed = new Fail("agent exit status " + a.child.exitCode + " after EOF");
  if (!failed && /Sanitizer|runtime error:/.test(a.stderr()))
    failed = new Fail("sanitizer report: " + a.stderr().slice(-2000));
}
mock.kill("SIGTERM");
fs.rmSync(tmp, { recursive: true, force: true });
if (failed) {
  console.log(`FAIL sdk.${format}: ${failed.message}`);
  if (!(failed instanceof Fail)) console.log(failed.stack);
  for (const a of agents) process.stderr.write(a.stderr().slice(-3000));
  process.exit(1);
}
console.log(`PASS sdk.${format}`);
process.exit(0);
