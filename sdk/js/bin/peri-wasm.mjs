#!/usr/bin/env node
// peri-wasm.mjs — `peri-wasm acp`: the agent host's WebAssembly form under Node,
// speaking ACP on stdin/stdout like `peri acp`, with the same flags. This file is the
// only part of the package that reads the environment and ~/.peri/ (as src/cli/ does
// for peri): it maps them into the start object and the host options.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { WasmHost, WasmHostError } from "../wasm-host.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_MODULE = path.resolve(HERE, "../../../build/peri-agent.wasm");

function usage(out) {
  out.write(
    "usage: peri-wasm acp [--cwd DIR] [--db PATH | --store URL] [--settings FILE|-]\n" +
      "                     [--machine-id ID] [--shared-store] [--module FILE] [--allow HOST:PORT]...\n" +
      "  Runs the Agent Client Protocol server on stdin/stdout, inside the WebAssembly\n" +
      "  form of the agent host (peri-agent.wasm) under Node.\n" +
      "  --cwd DIR          the workspace path in the virtual workspace (absolute; default:\n" +
      "                     the current directory's path); never checked against real files\n" +
      "  --db PATH          the store locator; the WebAssembly form has no local store, so\n" +
      "                     only a postgresql:// URL is accepted (a path is refused)\n" +
      "  --store URL        the shared PostgreSQL store, postgresql://... (default\n" +
      "                     $PERI_STORE, else the settings' \"storage\" string)\n" +
      "  --settings FILE|-  the whole settings document, replacing\n" +
      "                     ~/.peri/settings.json; '-' reads it from the first line\n" +
      "                     of stdin, before any JSON-RPC frame. Environment\n" +
      "                     overrides (PERI_MODEL, OPENAI_API_KEY, ...) still apply.\n" +
      "  --machine-id ID    persistent machine identity (default $PERI_MACHINE_ID,\n" +
      "                     else ~/.peri/machine-id)\n" +
      "  --shared-store     accepted for compatibility: a PostgreSQL store is shared\n" +
      "  --module FILE      the agent module (default $PERI_WASM_MODULE, else\n" +
      `                     ${DEFAULT_MODULE})\n` +
      "  --allow HOST:PORT  also grant the network port this destination (the model\n" +
      "                     providers' and MCP servers' URLs in the settings and the\n" +
      "                     store are granted; nothing else)\n" +
      "  Exit status: 0 at the end of input; 1 when the host cannot start (the reason\n" +
      "  on stderr) or fails, or at once when the module dies (a trap: the reason on\n" +
      "  stderr, each unanswered request answered -32603); 2 usage error.\n",
  );
}

function fail(msg, code = 1) {
  process.stderr.write(`peri-wasm acp: ${msg}\n`);
  process.exit(code);
}

const FRAME_MAX = 64 * 1024 * 1024; // the module's frame limit: longer lines are refused

/**
 * Cuts one direction of newline-delimited JSON-RPC into lines, calling onLine(text) for
 * each. A line longer than FRAME_MAX is dropped (the module refuses it with id null).
 */
function lineCutter(onLine) {
  let parts = [];
  let size = 0;
  let skipping = false;
  return (chunk) => {
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    for (;;) {
      const nl = buf.indexOf(10);
      const piece = nl < 0 ? buf : buf.subarray(0, nl);
      if (!skipping && size + piece.length > FRAME_MAX) {
        skipping = true;
        parts = [];
        size = 0;
      }
      if (!skipping && piece.length) {
        parts.push(piece);
        size += piece.length;
      }
      if (nl < 0) return;
      if (!skipping && size) onLine(Buffer.concat(parts, size).toString("utf8"));
      parts = [];
      size = 0;
      skipping = false;
      buf = buf.subarray(nl + 1);
    }
  };
}

/**
 * The client's requests the module has not answered yet, by the JSON of their ids: when
 * the module dies each is answered -32603, so that no client waits forever.
 */
function pendingRequests() {
  const ids = new Map();
  const parse = (line) => {
    try {
      const v = JSON.parse(line);
      return v && typeof v === "object" && !Array.isArray(v) ? v : null;
    } catch {
      return null;
    }
  };
  return {
    client: lineCutter((line) => {
      const v = parse(line);
      if (v && "method" in v && v.id !== undefined && v.id !== null) ids.set(JSON.stringify(v.id), v.id);
    }),
    module: lineCutter((line) => {
      const v = parse(line);
      if (v && !("method" in v) && ("result" in v || "error" in v) && v.id !== undefined && v.id !== null)
        ids.delete(JSON.stringify(v.id));
    }),
    answers(message) {
      return [...ids.values()]
        .map((id) => JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32603, message } }) + "\n")
        .join("");
    },
  };
}

/** host:port grants for every http(s) URL in the settings (providers, MCP servers). */
function grantsOf(settings) {
  const out = new Set();
  const walk = (v, depth) => {
    if (depth > 8 || v === null || typeof v !== "object") return;
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === "string" && /url$/i.test(k) && /^https?:\/\//i.test(x)) {
        try {
          const u = new URL(x);
          out.add(`${u.hostname}:${u.port || (u.protocol === "https:" ? 443 : 80)}`);
        } catch {
          // not a URL: the module reports it
        }
      } else {
        walk(x, depth + 1);
      }
    }
  };
  walk(settings, 0);
  return [...out];
}

/** The environment overrides `peri acp` applies to the settings (src/cli/host_env.c). */
function applyEnv(doc, env) {
  const value = (k) => (env[k] !== undefined && env[k] !== "" ? env[k] : undefined);
  for (const [name, provider, key] of [
    ["OPENAI_API_KEY", "openai", "apiKey"],
    ["OPENAI_BASE_URL", "openai", "baseUrl"],
    ["ANTHROPIC_API_KEY", "anthropic", "apiKey"],
    ["ANTHROPIC_BASE_URL", "anthropic", "baseUrl"],
  ]) {
    const v = value(name);
    if (v === undefined) continue;
    if (doc.providers === null || typeof doc.providers !== "object" || Array.isArray(doc.providers)) doc.providers = {};
    const p = doc.providers[provider];
    if (p === null || typeof p !== "object" || Array.isArray(p)) doc.providers[provider] = {};
    doc.providers[provider][key] = v;
  }
  if (value("PERI_MODEL") !== undefined) doc.model = value("PERI_MODEL");
  const budget = Number.parseInt(value("PERI_CONTEXT_BUDGET") ?? "", 10);
  if (budget > 0) doc.contextBudget = budget;
  const grace = Number.parseInt(value("PERI_CLOSE_GRACE_MS") ?? "", 10);
  if (grace >= 0) doc.closeGraceMs = grace;
}

/**
 * Moves the secrets out of the settings into the credentials the host answers
 * (docs/wasm-host.md "Credentials"): providers' `apiKey` become `model:<name>`, an MCP
 * server's `Authorization: Bearer` header becomes `mcp:<name>`. The settings keep no secret.
 */
function takeSecrets(doc) {
  const out = new Map();
  const obj = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
  if (obj(doc.providers)) {
    for (const [name, p] of Object.entries(doc.providers)) {
      if (obj(p) && typeof p.apiKey === "string" && p.apiKey) out.set(`model:${name}`, p.apiKey);
      if (obj(p)) delete p.apiKey;
    }
  }
  if (obj(doc.mcpServers)) {
    for (const [name, s] of Object.entries(doc.mcpServers)) {
      if (!obj(s) || !obj(s.headers)) continue;
      for (const h of Object.keys(s.headers)) {
        const v = s.headers[h];
        if (h.toLowerCase() !== "authorization" || typeof v !== "string") continue;
        const m = /^Bearer\s+(.+)$/i.exec(v);
        if (m) out.set(`mcp:${name}`, m[1]);
        delete s.headers[h];
      }
    }
  }
  return out;
}

/** Reads the first line of stdin; resolves [line, rest-of-chunk]. */
function firstLine() {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (d) => {
      buf = Buffer.concat([buf, d]);
      const i = buf.indexOf(10);
      if (i < 0) return;
      process.stdin.off("data", onData);
      process.stdin.pause();
      resolve([buf.subarray(0, i).toString("utf8"), buf.subarray(i + 1)]);
    };
    process.stdin.on("data", onData);
    process.stdin.once("end", () => reject(new Error("cannot read the settings line from stdin")));
  });
}

// The password of host:port:db:user in a libpq password file (libpq's format: `*` matches
// anything, `\\` escapes `:` and `\\`); a file others may read is ignored, as libpq does.
function pgpass(file, host, port, db, user) {
  if (!file) return undefined;
  let text;
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return undefined;
    if (st.mode & 0o077) {
      process.stderr.write(`peri-wasm acp: warning: password file "${file}" has group or world access; permissions should be u=rw (0600) or less: it is not used\n`);
      return undefined;
    }
    text = fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split(/\r?\n/)) {
    if (!line || line.startsWith("#")) continue;
    const fields = [];
    let cur = "";
    for (let i = 0; i < line.length; i++) {
      if (line[i] === "\\" && i + 1 < line.length) cur += line[++i];
      else if (line[i] === ":" && fields.length < 4) fields.push(cur), (cur = "");
      else cur += line[i];
    }
    fields.push(cur);
    if (fields.length !== 5 || !fields[4]) continue;
    const want = [host, port, db, user];
    if (want.every((w, k) => fields[k] === "*" || fields[k] === w)) return fields[4];
  }
  return undefined;
}

async function main(argv) {
  if (argv[0] !== "acp") {
    if (argv[0] === "--help" || argv[0] === "-h") return usage(process.stdout), 0;
    usage(process.stderr);
    return 2;
  }
  const a = { allow: [] };
  for (let i = 1; i < argv.length; i++) {
    const k = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : null);
    if (k === "--help" || k === "-h") return usage(process.stdout), 0;
    if (k === "--shared-store") continue;
    if (["--cwd", "--db", "--store", "--settings", "--machine-id", "--module", "--allow"].includes(k)) {
      const v = val();
      if (v === null) {
        process.stderr.write(`peri-wasm acp: ${k} needs a value\n`);
        usage(process.stderr);
        return 2;
      }
      if (k === "--allow") a.allow.push(v);
      else a[k.slice(2)] = v;
      continue;
    }
    process.stderr.write(`peri-wasm acp: unexpected argument "${k}"\n`);
    usage(process.stderr);
    return 2;
  }
  const home = process.env.HOME;
  const modulePath = a.module ?? process.env.PERI_WASM_MODULE ?? DEFAULT_MODULE;
  if (!fs.existsSync(modulePath))
    fail(`the agent module ${modulePath} does not exist (build peri-agent.wasm with the normal build, or pass --module FILE)`);

  let settings = {};
  let pending = null;
  try {
    if (a.settings === "-") {
      const [line, rest] = await firstLine();
      settings = JSON.parse(line);
      pending = rest;
    } else if (a.settings) {
      settings = JSON.parse(fs.readFileSync(a.settings, "utf8"));
    } else if (home && fs.existsSync(path.join(home, ".peri", "settings.json"))) {
      settings = JSON.parse(fs.readFileSync(path.join(home, ".peri", "settings.json"), "utf8"));
    }
  } catch (e) {
    fail(`settings: ${e.message}`);
  }
  if (settings === null || typeof settings !== "object" || Array.isArray(settings)) fail("settings must be an object");
  applyEnv(settings, process.env);
  const secrets = takeSecrets(settings);
  let store =
    a.store ?? a.db ?? process.env.PERI_STORE ?? (typeof settings?.storage === "string" && settings.storage ? settings.storage : null);
  if (!store) fail("no store: pass --store postgresql://... (the WebAssembly form has no local store)");
  // Read as libpq reads it: the PG* variables fill what the URL leaves out (as `peri acp`
  // does); the password (userinfo, ?password=, PGPASSWORD, else the password file) becomes
  // the `store` credential, so the start object carries none.
  let storePassword;
  let storeDest = null;
  try {
    const u = new URL(store);
    if (/^postgres(ql)?:$/i.test(u.protocol)) {
      const q = u.searchParams;
      const envMap = { PGHOST: "host", PGPORT: "port", PGUSER: "user", PGDATABASE: "dbname",
        PGSSLMODE: "sslmode", PGAPPNAME: "application_name", PGCONNECT_TIMEOUT: "connect_timeout",
        PGPASSFILE: "passfile" };
      const given = { host: u.hostname, port: u.port, user: u.username, dbname: u.pathname.slice(1) };
      for (const [env, key] of Object.entries(envMap))
        if (process.env[env] && !q.get(key) && !given[key]) q.set(key, process.env[env]);
      const host = q.get("hostaddr") || q.get("host") || decodeURIComponent(u.hostname);
      const port = q.get("port") || u.port || "5432";
      const user = q.get("user") || decodeURIComponent(u.username);
      const db = q.get("dbname") || decodeURIComponent(u.pathname.slice(1)) || user;
      if (u.password) storePassword = decodeURIComponent(u.password);
      else if (q.get("password") !== null) storePassword = q.get("password");
      else if (process.env.PGPASSWORD) storePassword = process.env.PGPASSWORD;
      else storePassword = pgpass(q.get("passfile") ?? (home ? path.join(home, ".pgpass") : null),
        !host || host.startsWith("/") ? "localhost" : host, port, db, user);
      u.password = "";
      q.delete("password");
      q.delete("passfile");
      store = u.toString();
      if (host && !host.startsWith("/") && !host.includes(",")) storeDest = `${host}:${port}`;
    }
  } catch {
    // a local locator: the start object check refuses it
  }
  let machineId = a["machine-id"] ?? process.env.PERI_MACHINE_ID;
  if (!machineId && home) {
    try {
      machineId = fs.readFileSync(path.join(home, ".peri", "machine-id"), "utf8").trim();
    } catch {
      // reported below
    }
  }
  if (!machineId) fail("machine id: pass --machine-id ID (a persistent UUID), or set PERI_MACHINE_ID");
  const cwd = a.cwd ? path.resolve(a.cwd) : process.cwd();

  const allow = [...a.allow, ...grantsOf(settings)];
  if (storeDest) allow.push(storeDest);

  let host;
  const pendingReq = pendingRequests();
  let died = false;
  let running = false; // a failure to start is reported by the start's own error
  // The module died (a trap, or it exited): no answer will come from it. The reason goes
  // to stderr, every request it left unanswered gets -32603, and the command exits 1.
  const onExit = ({ message }) => {
    if (died || !running) return;
    died = true;
    process.stderr.write(`peri-wasm acp: the agent module stopped: ${message}\n`);
    process.stdin.pause();
    process.stdout.write(pendingReq.answers(`the agent module stopped: ${message}`), () => process.exit(1));
  };
  try {
    host = await WasmHost.start({
      moduleUrl: modulePath,
      start: { cwd, settings, storage: { url: store, credential: { source: "host" } }, machineId },
      send: (b) => {
        pendingReq.module(b);
        process.stdout.write(b);
      },
      onExit,
      onLog: (level, text) => process.stderr.write(`peri-wasm: ${text}\n`),
      allow,
      // secrets stay out of the start object: the module asks for them by kind
      credentials: (kind) =>
        kind === "store" ? storePassword
        : kind === "telemetry" ? process.env.PERI_TELEMETRY_TOKEN || undefined
        : secrets.get(kind),
    });
  } catch (e) {
    fail(e instanceof WasmHostError || e instanceof Error ? e.message : String(e));
  }
  process.stdout.on("error", () => {}); // a vanished client is the end of input
  running = true;
  const feed = (d) => {
    if (died) return; // the input after a death has nobody to go to
    pendingReq.client(d);
    host.input(d);
  };
  if (pending && pending.length) feed(pending);
  process.stdin.on("data", feed);
  // the end may already have been seen while the settings line was read
  if (!process.stdin.readableEnded) await new Promise((resolve) => process.stdin.once("end", resolve).resume());
  host.inputEnd();
  const report = await host.close();
  if (report.outcome !== "settled") {
    process.stderr.write(`peri-wasm acp: ${report.outcome === "timeout" ? "the module did not report settlement in time (not a stop)" : report.failure?.message ?? report.outcome}\n`);
    return 1;
  }
  // the store never opened (its reason was logged): the command failed, as native
  if (report.module && report.module.store === "failed") return 1;
  return 0;
}

main(process.argv.slice(2)).then(
  // stdout is asynchronous on pipes: everything the module sent goes out before exit
  (code) => process.stdout.write("", () => process.exit(code ?? 0)),
  (e) => fail(e?.message ?? String(e)),
);
