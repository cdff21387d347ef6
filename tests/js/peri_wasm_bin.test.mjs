// peri_wasm_bin.test.mjs — `sdk/js/bin/peri-wasm.mjs acp` (flags, a missing module, a
// local store refused, stdio through the host with the test guest) and
// wasmTransportFactory (the SDK's transport over a WasmHost).
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { Sandbox, wasmTransportFactory } from "../../sdk/js/index.mjs";
import { BUILD, REPO, missing } from "./harness.mjs";

const BIN = path.join(REPO, "sdk/js/bin/peri-wasm.mjs");
const run = (args, input = "") => spawnSync(process.execPath, [BIN, ...args], { input, encoding: "utf8", env: { PATH: process.env.PATH, HOME: os.tmpdir() } });

function guestWasm() {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "peri-js-bin-")), "guest.wasm");
  const r = spawnSync("clang", ["--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-o", out, path.join(REPO, "tests/js/guest.c")]);
  return r.status === 0 ? out : null;
}

test("usage errors exit 2; --help exits 0", () => {
  const r = run(["acp", "--bogus"]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^peri-wasm acp: unexpected argument "--bogus"\nusage: peri-wasm acp \[--cwd DIR\] \[--db PATH \| --store URL\]/);
  assert.equal(run(["acp", "--store"]).status, 2);
  const h = run(["acp", "--help"]);
  assert.equal(h.status, 0);
  assert.match(h.stdout, /--machine-id ID/);
});

test("a missing module is named, in English, exit 1", () => {
  const r = run(["acp", "--module", "/nonexistent/peri-agent.wasm", "--store", "postgresql://h/d", "--machine-id", "m"]);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, "peri-wasm acp: the agent module /nonexistent/peri-agent.wasm does not exist (build peri-agent.wasm with the normal build, or pass --module FILE)\n");
});

test("a local store is refused; a missing machine id is named", (t) => {
  const wasm = guestWasm();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  const r = run(["acp", "--module", wasm, "--db", "/tmp/peri.db", "--machine-id", "m"]);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^peri-wasm acp: storage.url must name a remote store \(postgresql:\/\/...\): the local store locator "\/tmp\/peri.db" is refused/);
  const r2 = run(["acp", "--module", wasm, "--store", "postgresql://h/d"]);
  assert.equal(r2.status, 1);
  assert.match(r2.stderr, /machine id: pass --machine-id ID/);
});

test("stdio through the host: --settings -, input, end of input, settled exit 0", async (t) => {
  const wasm = guestWasm();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  const child = spawn(process.execPath, [BIN, "acp", "--module", wasm, "--store", "postgresql://db:5432/peri", "--machine-id", "m-1", "--cwd", "/w", "--settings", "-"], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stdin.write('{"model":"openai:x"}\nnow\n');
  child.stdin.end("timer 1\n");
  const code = await new Promise((r) => child.on("exit", r));
  assert.equal(code, 0);
  const lines = out.trim().split("\n");
  assert.match(lines[0], /^start \d+$/);
  assert.match(lines[1], /^now \d+ \d+$/);
  assert.match(lines[2], /^timer 0 \d+$/);
  assert.ok(lines.includes("input_end") && lines.includes("closing"), out);
});

// A module that dies (here: the guest's `trap`) is reported by both command lines: the
// reason on stderr, the client's unanswered request answered -32603, exit 1 at once
// (stdin still open: the host does not wait for the client to notice).
for (const [name, argv] of [
  ["peri-wasm acp", (wasm) => [process.execPath, BIN, "acp", "--module", wasm]],
  ["peri acp --wasm", (wasm) => [path.join(BUILD, "peri"), "acp", "--wasm", "--module", wasm]],
]) {
  test(`${name}: a module that traps is reported, its pending request answered, exit 1`, async (t) => {
    const wasm = guestWasm();
    if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
    const [exe, ...args] = argv(wasm);
    if (missing(t, !fs.existsSync(exe) && `${exe} is not built`)) return;
    const child = spawn(exe, [...args, "--store", "postgresql://127.0.0.1:9/peri", "--machine-id", "m-1", "--cwd", "/w"], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { PATH: process.env.PATH, HOME: os.tmpdir() },
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.stdin.write('{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{}}\ntrap\n');
    const timer = setTimeout(() => child.kill("SIGKILL"), 15000);
    const [code, signal] = await new Promise((r) => child.on("exit", (c, s) => r([c, s])));
    clearTimeout(timer);
    child.stdin.destroy();
    assert.equal(signal, null, `still running 15 s after the trap; stderr: ${err}`);
    assert.equal(code, 1, err);
    assert.match(err, /the agent module stopped: .*(trap|unreachable)/); // the engine names the trap
    const answers = out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    assert.equal(answers.length, 1, out);
    assert.equal(answers[0].id, 7);
    assert.equal(answers[0].error.code, -32603);
    assert.match(answers[0].error.message, /^the agent module stopped: /);
  });
}

test("the store password ($PGPASSWORD) reaches the module only through peri_host.credential", (t) => {
  const wasm = guestWasm();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  const args = [BIN, "acp", "--module", wasm, "--store", "postgresql://db:5432/peri", "--machine-id", "m-1", "--cwd", "/w", "--settings", "-"];
  const input = "{}\ncred store 64\ncred model:openai 64\nstartobj\n";
  const r = spawnSync(process.execPath, args, { input, encoding: "utf8", env: { PATH: process.env.PATH, HOME: os.tmpdir(), PGPASSWORD: "pg-s3cret" } });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split("\n");
  assert.ok(lines.includes("cred 0 9 pg-s3cret"), r.stdout);
  assert.ok(lines.includes("cred -4 0 "), r.stdout);
  assert.ok(!lines.find((l) => l.startsWith("startobj ")).includes("pg-s3cret"));
  const none = spawnSync(process.execPath, args, { input, encoding: "utf8", env: { PATH: process.env.PATH, HOME: os.tmpdir() } });
  assert.ok(none.stdout.split("\n").includes("cred -4 0 "), none.stdout);
  assert.ok(!none.stdout.includes("cred 0 "), none.stdout);
});

test("an MCP server's bearer token reaches the module only through peri_host.credential", (t) => {
  const wasm = guestWasm();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  const settings = { mcpServers: { docs: { url: "http://127.0.0.1:9/mcp", headers: { Authorization: "Bearer tok-9", "X-Other": "v" } } } };
  const args = [BIN, "acp", "--module", wasm, "--store", "postgresql://db:5432/peri", "--machine-id", "m-1", "--cwd", "/w", "--settings", "-"];
  const r = spawnSync(process.execPath, args, { input: `${JSON.stringify(settings)}\ncred mcp:docs 64\nstartobj\n`, encoding: "utf8", env: { PATH: process.env.PATH, HOME: os.tmpdir() } });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split("\n");
  assert.ok(lines.includes("cred 0 5 tok-9"), r.stdout);
  const start = JSON.parse(lines.find((l) => l.startsWith("startobj ")).slice(9));
  assert.ok(!JSON.stringify(start).includes("tok-9"), r.stdout);
  assert.deepEqual(start.settings.mcpServers.docs.headers, { "X-Other": "v" });
});

test("the start object from flags, files and the environment overrides of peri acp", async (t) => {
  const wasm = guestWasm();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "peri-js-home-"));
  fs.mkdirSync(path.join(home, ".peri"));
  fs.writeFileSync(path.join(home, ".peri", "settings.json"), JSON.stringify({ model: "openai:a", storage: "postgresql://s/db" }));
  fs.writeFileSync(path.join(home, ".peri", "machine-id"), "file-mid\n");
  const r = spawnSync(process.execPath, [BIN, "acp", "--module", wasm, "--cwd", "/abs/w"], {
    input: "startobj\ncred model:openai 64\n",
    encoding: "utf8",
    env: { PATH: process.env.PATH, HOME: home, PERI_MODEL: "openai:b", OPENAI_API_KEY: "k1", PERI_CLOSE_GRACE_MS: "7" },
  });
  assert.equal(r.status, 0, r.stderr);
  const line = r.stdout.split("\n").find((l) => l.startsWith("startobj "));
  assert.deepEqual(JSON.parse(line.slice(9)), {
    cwd: "/abs/w",
    settings: { model: "openai:b", storage: "postgresql://s/db", providers: { openai: {} }, closeGraceMs: 7 },
    storage: { url: "postgresql://s/db", credential: { source: "host" } },
    machineId: "file-mid",
  });
  // the provider key is not in the settings: the module asks for it by kind
  assert.ok(r.stdout.split("\n").includes("cred 0 2 k1"), r.stdout);
});

test("wasmTransportFactory: the connect request fills the start object; frames both ways", async (t) => {
  const wasm = guestWasm();
  if (missing(t, !wasm && "clang with a wasm32-wasi sysroot is missing")) return;
  // the factory as Sandbox.connect calls it (an Agent would read the frames itself)
  const factory = wasmTransportFactory({ moduleUrl: wasm, start: { settings: {} } });
  const transport = await factory({ path: "/remote/work", storeLocator: "postgresql://db/peri", credential: "pw-1", machineId: "m-2" });
  const startObj = { cwd: "/remote/work", settings: {}, storage: { url: "postgresql://db/peri", credential: { source: "host" } }, machineId: "m-2" };
  assert.equal(await transport.recv(), `start ${JSON.stringify(startObj).length}`);
  transport.send("startobj");
  assert.deepEqual(JSON.parse((await transport.recv()).slice(9)), startObj); // no secret in it
  transport.send("cred store 64");
  assert.equal(await transport.recv(), "cred 0 4 pw-1"); // the request's credential, asked for by kind
  transport.send("now");
  assert.match(await transport.recv(), /^now \d+ \d+$/);
  const report = await transport.close();
  assert.equal(report.outcome, "settled");
  assert.equal(await transport.recv(), "input_end");
  // and through a Sandbox: the agent's reader owns the frames; disconnect closes the host
  const sb = new Sandbox({ transportFactory: factory, storeLocator: "postgresql://db/peri", machineId: "m-3" });
  const agent = await sb.connect("/w2");
  await agent.disconnect();
  assert.equal(agent.ended, true);
});
