// wasm-host.mjs — the Node host of the agent host's WebAssembly form
// (docs/wasm-host.md): loads the module (by URL/path or by a module factory), checks
// the start object, implements the peri_port imports with ports.mjs, the peri_host
// imports (send to the client, log, settled, credential) and the few WASI p1 imports wasi-libc
// needs, and drives the module through its exports.
//
// Invariants:
//   - the start object (cwd, settings, storage, machineId) is checked before anything
//     is loaded or started; a local store locator is refused, never a fallback;
//   - no re-entrancy: every call into the module (client input, port events, close)
//     goes through one queue and runs only when no other export is running; imports
//     never call the module;
//   - an import never throws into the module: a bad pointer or length is INVALID (WASI:
//     EFAULT); only proc_exit unwinds it, on purpose;
//   - a module that traps or exits is dead: no export is called again, its ports are
//     closed, and close() still resolves with the settlement report;
//   - a timeout is reported as "timeout", never as a stop;
//   - secrets never travel in the start object: the module asks for them with
//     peri_host.credential, answered from the `credentials` option.

import fs from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { webcrypto } from "node:crypto";
import { Ports, PortError, portErrorName } from "./ports.mjs";
import { ArgumentError, TransportError } from "./errors.mjs";

export { Ports, PortError, EventKind, portErrorName, PORT_DEFAULTS } from "./ports.mjs";

/** An error of the WebAssembly host: `reason` says which kind. */
export class WasmHostError extends Error {
  /**
   * @param {"start_object"|"module_missing"|"module_invalid"|"options"|"start_failed"|"dead"} reason
   * @param {string} message
   * @param {ErrorOptions & { settlement?: object, code?: number }} [options]
   */
  constructor(reason, message, options = {}) {
    super(message, options);
    this.name = "WasmHostError";
    this.reason = reason;
    if (options.settlement) this.settlement = options.settlement;
    if (options.code !== undefined) this.code = options.code;
  }
}

// peri_input_end and peri_free are optional, as in Peri-C's host (src/wasmhost/host.c)
const REQUIRED_EXPORTS = ["memory", "peri_alloc", "peri_start", "peri_input", "peri_port_event", "peri_close"];
const KIND_RE = /^[^\0]{1,253}$/;
const START_KEYS = ["cwd", "settings", "storage", "machineId"];
const WASI = "wasi_snapshot_preview1";
const WASI_EBADF = 8;
const WASI_EFAULT = 21;
const WASI_ENOSYS = 52;
const DEFAULT_CLOSE_BUDGET_MS = 5000;

const isPlainObject = (v) =>
  v !== null && typeof v === "object" && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
const startError = (msg) => new WasmHostError("start_object", msg);

/**
 * Checks the start object; returns a normalised copy (storage as { url, credential? }).
 * Every rule throws a WasmHostError with reason "start_object".
 */
export function checkStartObject(start) {
  if (!isPlainObject(start))
    throw startError("the start object is required: { cwd, settings, storage, machineId }");
  const missing = START_KEYS.filter((k) => start[k] === undefined || start[k] === null);
  if (missing.length)
    throw startError(`the start object lacks ${missing.join(", ")}: cwd, settings, storage and machineId are all required`);
  const { cwd, settings, machineId } = start;
  if (typeof cwd !== "string" || !cwd.startsWith("/") || cwd.includes("\0"))
    throw startError("cwd must be an absolute path");
  if (!isPlainObject(settings)) throw startError("settings must be an object");
  let storage = start.storage;
  if (typeof storage === "string") storage = { url: storage };
  if (!isPlainObject(storage) || typeof storage.url !== "string" || storage.url === "")
    throw startError('storage must be an object { url, credential } naming the remote store');
  if (!/^postgres(ql)?:\/\//i.test(storage.url))
    throw startError(
      `storage.url must name a remote store (postgresql://...): the local store locator "${storage.url}" is refused ` +
        "in the WebAssembly form, which has no local files and never falls back to a local store",
    );
  if (storage.credential !== undefined && !isPlainObject(storage.credential))
    throw startError("storage.credential must be an object when given, e.g. {\"source\": \"host\"}");
  if (storage.credential !== undefined && ("value" in storage.credential || storage.credential.source === "inline"))
    throw startError(
      "storage.credential must not carry the secret: secrets stay out of the start object " +
        '(give it through the host\'s credentials option; the start object says {"source": "host"})',
    );
  if (typeof machineId !== "string" || !/^[\x21-\x7e]{1,36}$/.test(machineId))
    throw startError("machineId must be 1..36 printable characters (a persistent UUID)");
  const out = { cwd, settings, storage: { url: storage.url }, machineId };
  if (storage.credential !== undefined) out.storage.credential = storage.credential;
  return out;
}

/**
 * Loads the agent module: by moduleFactory (a function returning a WebAssembly.Module
 * or its bytes), else by moduleUrl (a file path, a file: URL, or http(s):). A host that
 * cannot load by URL (loadByUrl: false, like a bundled worker) must pass a factory.
 * @returns {Promise<WebAssembly.Module>}
 */
export async function loadAgentModule({ moduleUrl, moduleFactory, loadByUrl = true } = {}) {
  let bytes;
  if (moduleFactory !== undefined) {
    if (typeof moduleFactory !== "function")
      throw new WasmHostError("options", "moduleFactory must be a function returning a WebAssembly.Module or its bytes");
    const got = await moduleFactory();
    if (got instanceof WebAssembly.Module) return got;
    if (got instanceof ArrayBuffer || ArrayBuffer.isView(got)) bytes = got;
    else throw new WasmHostError("options", "moduleFactory returned neither a WebAssembly.Module nor the module's bytes");
  } else if (moduleUrl === undefined || moduleUrl === null || !loadByUrl) {
    throw new WasmHostError(
      "options",
      loadByUrl
        ? "moduleFactory is required when no moduleUrl is given: pass moduleUrl (a path or URL of peri-agent.wasm) " +
            "or moduleFactory: () => WebAssembly.Module"
        : "moduleFactory is required: this host cannot load a module by URL (a bundled worker has no module file), " +
            "so pass moduleFactory: () => WebAssembly.Module (for example a static import of peri-agent.wasm)",
    );
  } else {
    const url = moduleUrl instanceof URL ? moduleUrl : /^[a-z][a-z0-9+.-]*:\/\//i.test(String(moduleUrl)) ? new URL(String(moduleUrl)) : null;
    if (url && (url.protocol === "http:" || url.protocol === "https:")) {
      const r = await fetch(url);
      if (!r.ok) throw new WasmHostError("module_missing", `the agent module ${url} could not be fetched: HTTP ${r.status}`);
      bytes = new Uint8Array(await r.arrayBuffer());
    } else {
      if (typeof moduleUrl !== "string" && !(moduleUrl instanceof URL))
        throw new WasmHostError("options", "moduleUrl must be a path, a file: URL or an http(s): URL");
      const path = url ? fileURLToPath(url) : moduleUrl;
      try {
        bytes = await fs.readFile(path);
      } catch (e) {
        if (e.code === "ENOENT")
          throw new WasmHostError("module_missing", `the agent module ${path} does not exist`, { cause: e });
        throw new WasmHostError("module_missing", `cannot read the agent module ${path}: ${e.message}`, { cause: e });
      }
    }
  }
  try {
    return await WebAssembly.compile(bytes);
  } catch (e) {
    throw new WasmHostError("module_invalid", `the agent module is not valid WebAssembly: ${e.message}`, { cause: e });
  }
}

/** Thrown through the module by proc_exit (the one import that unwinds on purpose). */
class ProcExit extends Error {
  constructor(code) {
    super(`the module exited with status ${code}`);
    this.exitCode = code;
  }
}

/**
 * @typedef {object} WasmHostOptions
 * @property {object} start the start object { cwd, settings, storage, machineId }
 * @property {string | URL} [moduleUrl] the module file or URL
 * @property {() => (WebAssembly.Module | BufferSource | Promise<WebAssembly.Module | BufferSource>)} [moduleFactory]
 * @property {boolean} [loadByUrl] false: this host cannot load by URL (a factory is required)
 * @property {(bytes: Uint8Array) => void} send REQUIRED: bytes for the client (ACP frames)
 * @property {(level: number, text: string) => void} [onLog] the module's diagnostics
 * @property {(text: string) => void} [stderr] the module's WASI stderr (default: process.stderr)
 * @property {(info: { reason: string, message: string }) => void} [onExit] the module died
 * @property {string[] | Function} [allow] destinations the network port grants (default none)
 * @property {Partial<typeof import("./ports.mjs").PORT_DEFAULTS>} [limits]
 * @property {import("node:tls").ConnectionOptions} [tls] TLS options (e.g. ca) of the trust store
 * @property {Record<string, string> | ((kind: string) => string | undefined)} [credentials]
 *   the secrets peri_host.credential answers, by kind ("store", "model:<name>",
 *   "mcp:<name>", "telemetry"); a kind without one is not_found
 * @property {boolean} [checkStart] false: hand `start` to the module as given (a
 *   conformance guest such as port_guest.wasm); default true (the agent's start object)
 */

/** One instance of the agent module with its ports. Create with WasmHost.start(). */
export class WasmHost {
  #exports;
  #memory;
  #ports;
  #opts;
  /** @type {{ run: () => void, drop: () => void }[]} */
  #queue = [];
  #scheduled = false;
  #inExport = false;
  #dead = null;
  #inputEnded = false;
  #closing = null;
  #moduleReport = undefined;
  /** @type {((r: any) => void) | null} */
  #onSettled = null;
  #lastError = "";
  #decoder = new TextDecoder("utf-8", { fatal: true });
  #lenient = new TextDecoder("utf-8");

  /**
   * Checks the options and the start object, loads and instantiates the module, and
   * calls _initialize and peri_start. A start-up failure closes every port first and
   * throws a WasmHostError whose `settlement` is the cleanup report.
   * @param {WasmHostOptions} options
   * @returns {Promise<WasmHost>}
   */
  static async start(options) {
    if (!isPlainObject(options)) throw new WasmHostError("options", "the host options are required");
    const start = options.checkStart === false ? options.start : checkStartObject(options.start);
    if (typeof options.send !== "function")
      throw new WasmHostError("options", "send is required: the function that takes the module's bytes for the client");
    const creds = options.credentials;
    if (creds !== undefined && typeof creds !== "function" && !isPlainObject(creds))
      throw new WasmHostError("options", "credentials must be an object { kind: secret } or a function kind => secret | undefined");
    if (isPlainObject(creds))
      for (const [k, v] of Object.entries(creds))
        if (typeof v !== "string" && v !== undefined)
          throw new WasmHostError("options", `credentials.${k} must be a string`);
    for (const k of ["onLog", "stderr", "onExit"])
      if (options[k] !== undefined && typeof options[k] !== "function")
        throw new WasmHostError("options", `${k} must be a function when given`);
    const host = new WasmHost(options); // checks allow and limits
    const mod = await loadAgentModule(options);
    await host.#instantiate(mod);
    try {
      host.#startModule(start);
    } catch (e) {
      if (e instanceof WasmHostError && e.settlement instanceof Promise) e.settlement = await e.settlement;
      throw e;
    }
    return host;
  }

  /** @param {WasmHostOptions} options */
  constructor(options) {
    this.#opts = options;
    try {
      this.#ports = new Ports({
        emit: (kind, handle, err, payload, delivered, stale) => this.#event(kind, handle, err, payload, delivered, stale),
        allow: options.allow,
        limits: options.limits,
        tls: options.tls,
      });
    } catch (e) {
      throw new WasmHostError("options", e.message, { cause: e });
    }
  }

  /** The instance's ports (stats, closeAll). */
  get ports() {
    return this.#ports;
  }

  /** Why the module died ({ reason, message }), or null while it runs. */
  get failure() {
    return this.#dead;
  }

  async #instantiate(mod) {
    const exports = WebAssembly.Module.exports(mod).map((e) => e.name);
    const lacking = REQUIRED_EXPORTS.filter((n) => !exports.includes(n));
    if (lacking.length)
      throw new WasmHostError("module_invalid", `the module does not export ${lacking.join(", ")}: it is not an agent-host module (docs/wasm-host.md)`);
    const provided = { peri_port: this.#portImports(), peri_host: this.#hostImports(), [WASI]: this.#wasiImports() };
    const imports = {};
    for (const imp of WebAssembly.Module.imports(mod)) {
      if (imp.kind !== "function")
        throw new WasmHostError("module_invalid", `the module imports the ${imp.kind} ${imp.module}.${imp.name}, which this host does not provide`);
      const table = provided[imp.module];
      if (!table) throw new WasmHostError("module_invalid", `the module imports ${imp.module}.${imp.name}, which this host does not provide`);
      let fn = table[imp.name];
      if (!fn && imp.module === WASI) fn = imp.name.startsWith("fd_") ? () => WASI_EBADF : () => WASI_ENOSYS;
      if (!fn) throw new WasmHostError("module_invalid", `the module imports ${imp.module}.${imp.name}, which this host does not provide`);
      (imports[imp.module] ??= {})[imp.name] = fn;
    }
    let inst;
    try {
      inst = await WebAssembly.instantiate(mod, imports);
    } catch (e) {
      throw new WasmHostError("module_invalid", `the module cannot be instantiated: ${e.message}`, { cause: e });
    }
    if (!(inst.exports.memory instanceof WebAssembly.Memory))
      throw new WasmHostError("module_invalid", "the module's export memory is not a memory");
    this.#exports = inst.exports;
    this.#memory = inst.exports.memory;
  }

  #startModule(start) {
    if (typeof this.#exports._initialize === "function") {
      this.#call("_initialize");
      if (this.#dead) throw this.#startFailedSync(`the module failed to initialise: ${this.#dead.message}`);
    }
    const text = Buffer.from(JSON.stringify(start), "utf8");
    const [ptr, len] = this.#give(text);
    if (!ptr) throw this.#startFailedSync("the module has no memory for the start object");
    const rc = this.#call("peri_start", ptr, len);
    if (this.#dead) throw this.#startFailedSync(`the module failed to start: ${this.#dead.message}`);
    if (rc !== 0) {
      const why = this.#lastError ? `: ${this.#lastError}` : "";
      throw this.#startFailedSync(`the module refused to start (${portErrorName(rc)})${why}`, rc);
    }
  }

  #startFailedSync(message, code) {
    this.#die("start_failed", message); // drops what was queued, closes every port
    const e = new WasmHostError("start_failed", message, { code });
    e.settlement = this.#ports.closeAll();
    return e;
  }

  // ------------------------------------------------------------ calling the module

  #call(name, ...args) {
    if (this.#dead) return undefined;
    if (this.#inExport) throw new Error(`internal: ${name} called while another export runs`);
    this.#inExport = true;
    try {
      return this.#exports[name](...args);
    } catch (e) {
      this.#die(e instanceof ProcExit ? "exit" : "trap", e instanceof ProcExit ? e.message : `the module trapped in ${name}: ${e.message}`);
      return undefined;
    } finally {
      this.#inExport = false;
    }
  }

  #die(reason, message) {
    if (this.#dead) return;
    this.#dead = { reason, message };
    // what was queued for the module will never run: events count as delivered
    for (const task of this.#queue.splice(0)) task.drop();
    this.#ports.closeAll();
    try {
      this.#opts.onExit?.({ reason, message });
    } catch {
      // the embedder's callback does not change the outcome
    }
    this.#onSettled?.(null);
  }

  /** Copies bytes into a block from peri_alloc: [ptr, len], [0, 0] when empty or no memory. */
  #give(bytes) {
    if (!bytes || bytes.length === 0) return [0, 0];
    const ptr = this.#call("peri_alloc", bytes.length) >>> 0;
    if (!ptr || this.#dead) return [0, 0];
    if (ptr + bytes.length > this.#memory.buffer.byteLength) {
      this.#die("trap", "peri_alloc returned a block outside the module's memory");
      return [0, 0];
    }
    new Uint8Array(this.#memory.buffer, ptr, bytes.length).set(bytes);
    return [ptr, bytes.length];
  }

  #enqueue(run, drop = () => {}) {
    if (this.#dead) return false;
    this.#queue.push({ run, drop });
    if (!this.#scheduled) {
      // A microtask runs only once the JS stack is empty, so never inside an export;
      // after 256 tasks #drain yields to Node's I/O with setImmediate.
      this.#scheduled = true;
      queueMicrotask(() => this.#drain());
    }
    return true;
  }

  #drain() {
    this.#scheduled = false;
    let n = 0;
    while (this.#queue.length && !this.#dead && !this.#inExport) {
      this.#queue.shift().run();
      if (++n >= 256 && this.#queue.length) {
        // give Node's I/O a turn
        this.#scheduled = true;
        setImmediate(() => this.#drain());
        return;
      }
    }
  }

  #event(kind, handle, err, payload, delivered, stale) {
    const queued = this.#enqueue(() => {
      if (stale?.()) return delivered(); // its handle was given up: only the settling event goes
      const [ptr, len] = this.#give(payload);
      this.#call("peri_port_event", kind, handle, err, ptr, len);
      delivered();
    }, delivered);
    if (!queued) delivered(); // a dead module takes no events: the handle is settled
  }

  /**
   * Bytes the client sent (any split).
   * @param {Uint8Array | string} bytes
   */
  input(bytes) {
    if (this.#dead) throw new WasmHostError("dead", `the module has ended: ${this.#dead.message}`);
    if (this.#inputEnded) throw new WasmHostError("options", "input after inputEnd()");
    if (this.#closing) throw new WasmHostError("options", "input after close()");
    const b = typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes;
    if (!(b instanceof Uint8Array)) throw new WasmHostError("options", "input takes a Uint8Array or a string");
    if (b.length === 0) return;
    const copy = Buffer.from(b);
    this.#enqueue(() => {
      const [ptr, len] = this.#give(copy);
      if (!ptr) return this.#die("trap", "the module has no memory for the client's input");
      this.#call("peri_input", ptr, len);
    });
  }

  /** The client closed its side. */
  inputEnd() {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    if (typeof this.#exports?.peri_input_end === "function") this.#enqueue(() => this.#call("peri_input_end"));
  }

  /**
   * Begins shutdown: peri_close (the module cancels its turns and closes what it
   * opened), waits up to budgetMs for its `settled` report, then closes every port
   * that is still open and waits for those to settle.
   * Resolves with { outcome: "settled" | "timeout" | "dead", module, ports, failure }:
   * "timeout" means the module did not report settlement in time (it is NOT a stop).
   * @param {{ budgetMs?: number }} [options]
   */
  close({ budgetMs = DEFAULT_CLOSE_BUDGET_MS } = {}) {
    if (!Number.isSafeInteger(budgetMs) || budgetMs < 0)
      return Promise.reject(new WasmHostError("options", `close budget must be a non-negative safe integer of milliseconds, got ${String(budgetMs)}`));
    this.#closing ??= (async () => {
      let outcome = "dead";
      if (!this.#dead) {
        const report = new Promise((resolve) => {
          if (this.#moduleReport !== undefined) return resolve(this.#moduleReport);
          this.#onSettled = resolve;
        });
        this.#enqueue(() => this.#call("peri_close"));
        let timer;
        const wait = Math.min(budgetMs, 0x7fffffff); // setTimeout's limit: ~24 days
        const timeout = new Promise((r) => (timer = setTimeout(() => r("timeout"), wait)));
        const got = await Promise.race([report, timeout]);
        clearTimeout(timer);
        outcome = got === "timeout" ? "timeout" : this.#dead ? "dead" : "settled";
      }
      const ports = await this.#ports.closeAll();
      return { outcome, module: this.#moduleReport ?? null, ports, failure: this.#dead };
    })();
    return this.#closing;
  }

  // ------------------------------------------------------------ memory access

  #u8() {
    return new Uint8Array(this.#memory.buffer);
  }

  /** [ptr, len] as unsigned, or null when the range is outside the memory. */
  #range(ptr, len) {
    const p = ptr >>> 0;
    const n = len >>> 0;
    if (p + n > this.#memory.buffer.byteLength) return null;
    return [p, n];
  }

  #bytes(ptr, len) {
    const r = this.#range(ptr, len);
    return r ? this.#u8().subarray(r[0], r[0] + r[1]) : null;
  }

  #string(ptr, len) {
    const b = this.#bytes(ptr, len);
    if (!b) return null;
    try {
      return this.#decoder.decode(b);
    } catch {
      return null;
    }
  }

  #putU32(ptr, v) {
    if (!this.#range(ptr, 4)) return false;
    new DataView(this.#memory.buffer).setUint32(ptr >>> 0, v >>> 0, true);
    return true;
  }

  // ------------------------------------------------------------ imports

  /** Wraps an import so that nothing it throws reaches the module. */
  #guard(fn, onThrow) {
    return (...args) => {
      try {
        return fn(...args);
      } catch (e) {
        if (e instanceof ProcExit) throw e;
        return onThrow;
      }
    };
  }

  #portImports() {
    const P = this.#ports;
    const E = PortError;
    const g = (fn) => this.#guard(fn, E.IO);
    return {
      open: g((hp, hl, port, flags, sp, sl, out) => {
        const host = this.#string(hp, hl);
        const sni = sl === 0 ? "" : this.#string(sp, sl);
        if (host === null || sni === null || !this.#range(out, 4) || (flags & ~1) !== 0) return E.INVALID;
        const [err, h] = P.open(host, port, (flags & 1) === 1, sni);
        if (err === E.OK) this.#putU32(out, h);
        return err;
      }),
      read: g((h, buf, cap, out) => {
        if (!this.#range(buf, cap) || !this.#range(out, 4)) return E.INVALID;
        const [err, bytes] = P.read(h >>> 0, cap >>> 0);
        if (err !== E.OK) return err;
        this.#u8().set(bytes, buf >>> 0);
        this.#putU32(out, bytes.length);
        return E.OK;
      }),
      write: g((h, ptr, len) => {
        const b = this.#bytes(ptr, len);
        return b ? P.write(h >>> 0, b) : E.INVALID;
      }),
      shutdown: g((h) => P.shutdown(h >>> 0)),
      close: g((h) => P.close(h >>> 0)),
      resolve: g((np, nl, out) => {
        const name = this.#string(np, nl);
        if (name === null || !this.#range(out, 4)) return E.INVALID;
        const [err, h] = P.resolve(name);
        if (err === E.OK) this.#putU32(out, h);
        return err;
      }),
      resolve_cancel: g((h) => P.resolveCancel(h >>> 0)),
      now_ms: this.#guard(() => P.nowMs(), 0n),
      wall_ms: this.#guard(() => P.wallMs(), 0n),
      timer_set: g((delay, out) => {
        if (!this.#range(out, 4)) return E.INVALID;
        const [err, h] = P.timerSet(BigInt(delay));
        if (err === E.OK) this.#putU32(out, h);
        return err;
      }),
      timer_cancel: g((h) => P.timerCancel(h >>> 0)),
      starttls: g((h, sp, sl) => {
        const sni = sl === 0 ? (this.#range(sp, 0) ? "" : null) : this.#string(sp, sl);
        return sni === null ? E.INVALID : P.starttls(h >>> 0, sni);
      }),
    };
  }

  #hostImports() {
    return {
      send: this.#guard((ptr, len) => {
        const b = this.#bytes(ptr, len);
        if (!b) return PortError.INVALID;
        this.#opts.send(Uint8Array.from(b));
        return PortError.OK;
      }, PortError.IO),
      log: this.#guard((level, ptr, len) => {
        const b = this.#bytes(ptr, len);
        if (!b) return;
        const text = this.#lenient.decode(b);
        if (level === 0) this.#lastError = text;
        if (this.#opts.onLog) this.#opts.onLog(level, text);
        else process.stderr.write(`peri-wasm: ${text}\n`);
      }, undefined),
      credential: this.#guard((kp, kl, buf, cap, out) => {
        const kind = this.#string(kp, kl);
        if (kind === null || !KIND_RE.test(kind) || !this.#range(buf, cap) || !this.#range(out, 4)) return PortError.INVALID;
        const secret = this.#credential(kind);
        if (secret === undefined) {
          this.#putU32(out, 0);
          return PortError.NOT_FOUND;
        }
        const bytes = Buffer.from(secret, "utf8");
        this.#putU32(out, bytes.length);
        if (bytes.length > cap >>> 0) return PortError.LIMIT;
        this.#u8().set(bytes, buf >>> 0);
        return PortError.OK;
      }, PortError.IO),
      settled: this.#guard((ptr, len) => {
        if (this.#moduleReport !== undefined) return; // once
        const text = this.#string(ptr, len);
        let report = text;
        try {
          report = text === null ? null : JSON.parse(text);
        } catch {
          // kept as text
        }
        this.#moduleReport = report;
        this.#onSettled?.(report);
      }, undefined),
    };
  }

  /** The embedder's secret of that kind, or undefined (never an empty stand-in). */
  #credential(kind) {
    const c = this.#opts.credentials;
    let v;
    if (typeof c === "function") {
      try {
        v = c(kind);
      } catch {
        return undefined;
      }
    } else if (isPlainObject(c) && Object.hasOwn(c, kind)) {
      v = c[kind];
    }
    return typeof v === "string" ? v : undefined;
  }

  #wasiImports() {
    const stderr = this.#opts.stderr ?? ((t) => process.stderr.write(t));
    return {
      fd_write: this.#guard((fd, iovs, n, out) => {
        if (fd !== 1 && fd !== 2) return WASI_EBADF; // stdout is the client's: never written
        if (!this.#range(iovs, (n >>> 0) * 8) || !this.#range(out, 4)) return WASI_EFAULT;
        const dv = new DataView(this.#memory.buffer);
        const parts = [];
        let total = 0;
        for (let i = 0; i < n >>> 0; i++) {
          const b = this.#bytes(dv.getUint32((iovs >>> 0) + i * 8, true), dv.getUint32((iovs >>> 0) + i * 8 + 4, true));
          if (!b) return WASI_EFAULT;
          parts.push(Buffer.from(b));
          total += b.length;
        }
        stderr(this.#lenient.decode(Buffer.concat(parts, total)));
        this.#putU32(out, total);
        return 0;
      }, WASI_EFAULT),
      random_get: this.#guard((ptr, len) => {
        const b = this.#bytes(ptr, len);
        if (!b) return WASI_EFAULT;
        for (let i = 0; i < b.length; i += 65536) webcrypto.getRandomValues(b.subarray(i, Math.min(b.length, i + 65536)));
        return 0;
      }, WASI_EFAULT),
      proc_exit: (code) => {
        throw new ProcExit(code);
      },
      args_sizes_get: this.#guard((a, b) => (this.#putU32(a, 0) && this.#putU32(b, 0) ? 0 : WASI_EFAULT), WASI_EFAULT),
      environ_sizes_get: this.#guard((a, b) => (this.#putU32(a, 0) && this.#putU32(b, 0) ? 0 : WASI_EFAULT), WASI_EFAULT),
      args_get: () => 0,
      environ_get: () => 0,
      fd_fdstat_get: this.#guard((fd, out) => {
        if (fd < 0 || fd > 2) return WASI_EBADF;
        if (!this.#range(out, 24)) return WASI_EFAULT;
        const u8 = this.#u8();
        u8.fill(0, out >>> 0, (out >>> 0) + 24);
        u8[out >>> 0] = 2; // character device
        return 0;
      }, WASI_EFAULT),
    };
  }
}

/**
 * A transportFactory (for Sandbox) that starts one WasmHost per connection. The start
 * object is hostOptions.start with what the connect request carries filling the gaps
 * (path → cwd, storeLocator → storage.url with {"source": "host"}, machineId), all
 * verbatim. The request's credential is the host's "store" credential (asked for
 * with peri_host.credential), never part of the start object; hostOptions.credentials
 * answers the other kinds. Closing the transport ends the client's input and closes
 * the host.
 * @param {Omit<WasmHostOptions, "send"> & { closeBudgetMs?: number }} hostOptions
 */
export function wasmTransportFactory(hostOptions) {
  if (!isPlainObject(hostOptions)) throw new ArgumentError("wasmTransportFactory needs the host options");
  return async (c) => {
    const given = hostOptions.start ?? {};
    const start = { ...given };
    start.cwd ??= c.path;
    start.machineId ??= c.machineId;
    if (start.storage === undefined && c.storeLocator !== undefined)
      start.storage = { url: c.storeLocator, credential: { source: "host" } };
    let credentials = hostOptions.credentials;
    if (c.credential !== undefined) {
      const given = credentials;
      credentials = (kind) => {
        if (kind === "store") return c.credential;
        if (typeof given === "function") return given(kind);
        return isPlainObject(given) && Object.hasOwn(given, kind) ? given[kind] : undefined;
      };
    }
    const frames = [];
    const waiters = [];
    let partial = "";
    let ended = false;
    const dec = new TextDecoder();
    const deliver = () => {
      while (waiters.length && (frames.length || ended)) waiters.shift()(frames.length ? frames.shift() : null);
    };
    const host = await WasmHost.start({
      ...hostOptions,
      start,
      credentials,
      send: (bytes) => {
        partial += dec.decode(bytes, { stream: true });
        let i;
        while ((i = partial.indexOf("\n")) >= 0) {
          const line = partial.slice(0, i).replace(/\r$/, "");
          partial = partial.slice(i + 1);
          if (line.trim() !== "") frames.push(line);
        }
        deliver();
      },
      onExit: (info) => {
        ended = true;
        deliver();
        hostOptions.onExit?.(info);
      },
    });
    let closing = null;
    return {
      host,
      send(frame) {
        if (ended || closing) throw new TransportError("cannot send: the WebAssembly host has ended");
        host.input(frame + "\n");
      },
      recv() {
        if (frames.length) return Promise.resolve(frames.shift());
        if (ended || closing) return Promise.resolve(null);
        return new Promise((r) => waiters.push(r));
      },
      close() {
        closing ??= (async () => {
          host.inputEnd();
          const report = await host.close({ budgetMs: hostOptions.closeBudgetMs ?? DEFAULT_CLOSE_BUDGET_MS });
          ended = true;
          deliver();
          return report;
        })();
        return closing;
      },
    };
  };
}
