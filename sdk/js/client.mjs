// client.mjs — the SDK core in JavaScript, mirroring libperi-sdk (src/sdk/client.c and
// close.c): a Sandbox with a REQUIRED transportFactory and the explicit host inputs, an
// Agent (one connection, one reader loop routing answers, session/update and
// session/request_permission), requests with bounded answer waits, sessions (new, load,
// resume, list, prompt, cancel) and the bounded, honest session close.
//
// Invariants: the SDK never resolves a path (it is forwarded as given), never reads
// the environment and never starts a process (only the stdio helper in transport.mjs
// does). Closing the transport (Agent.disconnect) is NOT closing a session.
//
// Callbacks. onUpdate runs synchronously in arrival order, before the next frame is
// handled (so a session/load's history has been delivered when load resolves).
// onPermission may be async; the reader does not wait for it, so a handler may itself
// call the SDK (there is no reader thread to deadlock, unlike the C SDK).

import {
  ArgumentError,
  ProtocolError,
  RpcError,
  SessionCloseIncompleteError,
  StateError,
  TimeoutError,
  TransportError,
  PSDK_RPC_CLOSE_INCOMPLETE,
  CLOSE_BUDGET_DEFAULT_MS,
  CLOSE_REPLAY_MS,
} from "./errors.mjs";

const DEFAULT_ANSWER_TIMEOUT_MS = 30000;
const MAX_SESSION_ID = 39; // the C SDK keeps ids in char[40]
const METHOD_NOT_FOUND = -32601;
const MAX_TIMEOUT_MS = 0x7fffffff; // setTimeout's limit

/**
 * What a permission handler may answer. Every answer that cannot be given as asked is a
 * rejection: the request's reject_once option (else reject_always, else outcome
 * "cancelled").
 */
export const Decision = Object.freeze({
  REJECT: "reject", // answered with the reject_once option
  // the allow_once option only, never an "always" option; a request without one (a
  // project-trust request) is rejected
  ALLOW: "allow",
  CANCELLED: "cancelled", // outcome "cancelled"
  // a project-trust request (toolCall._meta["peri.trustRequest"]): its trust_project
  // option, which lets the project's own MCP servers and hooks run on the agent's
  // machine; any other request is rejected
  TRUST_PROJECT: "trust_project",
});

// The optionId of the first option of kind k1, else of kind k2, or undefined.
function optionOf(options, k1, k2) {
  for (const kind of [k1, k2])
    for (const o of options)
      if (kind && isPlainObject(o) && o.kind === kind && typeof o.optionId === "string") return o.optionId;
  return undefined;
}

// The optionId a decision selects, or undefined for outcome "cancelled". ALLOW means
// "allow once": it selects only an allow_once option, never an "always" one, and never
// answers a trust request (whose only "allow" option records trust for good). Trust is
// given only by the decision that names it. Anything else is a rejection.
function answerOf(options, d, trust) {
  if (d === Decision.CANCELLED) return undefined;
  let opt;
  if (d === Decision.ALLOW && !trust) opt = optionOf(options, "allow_once");
  if (d === Decision.TRUST_PROJECT && trust)
    opt = options.find((o) => isPlainObject(o) && o.optionId === "trust_project")?.optionId;
  return opt ?? optionOf(options, "reject_once", "reject_always");
}

// Resolves once performance.now() has reached t. A timer counts from the event loop's
// cached clock, which can lag the real one by a few milliseconds, so setTimeout alone
// may fire before t; the wait resumes until t has passed (a close's last pause then
// ends exactly at its budget, not just before it, which would buy one more attempt).
const sleepUntil = (t) =>
  new Promise((r) => {
    const tick = () => {
      const left = t - performance.now();
      if (left <= 0) r();
      else setTimeout(tick, Math.ceil(left));
    };
    tick();
  });
const isPlainObject = (v) =>
  v !== null && typeof v === "object" && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

/**
 * @param {unknown} v
 * @param {string} name
 */
function optionalString(v, name) {
  if (v !== undefined && v !== null && typeof v !== "string")
    throw new ArgumentError(`${name} must be a string when given`);
  return v ?? undefined;
}

/**
 * @typedef {object} SandboxOptions
 * @property {(c: import("./transport.mjs").ConnectRequest) =>
 *   (import("./transport.mjs").Transport | Promise<import("./transport.mjs").Transport>)}
 *   transportFactory REQUIRED: makes the connection to an agent
 * @property {string} [storeLocator] forwarded verbatim to the factory
 * @property {string} [credential] forwarded verbatim to the factory
 * @property {string} [machineId] forwarded to the factory and announced in initialize
 * @property {number} [answerTimeoutMs] how long a request (not session/prompt) waits
 *   for its answer; <= 0 or absent: 30000. A timeout is TimeoutError, never "stopped".
 */

/** The embedder's handle: a required transport factory and the explicit host inputs. */
export class Sandbox {
  /** @param {SandboxOptions} options */
  constructor(options) {
    if (!options || typeof options !== "object" || typeof options.transportFactory !== "function")
      throw new ArgumentError("transportFactory is required");
    this.transportFactory = options.transportFactory;
    this.storeLocator = optionalString(options.storeLocator, "storeLocator");
    this.credential = optionalString(options.credential, "credential");
    this.machineId = optionalString(options.machineId, "machineId");
    const t = options.answerTimeoutMs;
    if (t !== undefined && (typeof t !== "number" || !Number.isFinite(t) || t > MAX_TIMEOUT_MS))
      throw new ArgumentError(`answerTimeoutMs must be a number of milliseconds up to ${MAX_TIMEOUT_MS}`);
    this.answerTimeoutMs = t > 0 ? t : DEFAULT_ANSWER_TIMEOUT_MS;
  }

  /**
   * Calls the factory with the path (verbatim) and starts reading.
   * @param {string} [path] the workspace path in the agent's environment
   * @returns {Promise<Agent>}
   */
  async connect(path) {
    optionalString(path, "path");
    const request = Object.freeze({
      path: path ?? undefined,
      storeLocator: this.storeLocator,
      credential: this.credential,
      machineId: this.machineId,
    });
    let t;
    try {
      t = await this.transportFactory(request);
    } catch (e) {
      if (e instanceof Error && "status" in e) throw e;
      throw new TransportError(`factory failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    if (!t || typeof t.send !== "function" || typeof t.recv !== "function" || typeof t.close !== "function")
      throw new TransportError("factory failed: it must return a transport with send, recv and close");
    return new Agent(this, t, path ?? undefined);
  }
}

/** One connection to an agent. */
export class Agent {
  #sb;
  #t;
  /** @type {Map<number, Call>} */
  #calls = new Map();
  /** @type {Map<string, Session>} */
  #sessions = new Map();
  #nextId = 0;
  #ended = false;
  #endMsg = "";
  /** @type {Promise<void>} */
  #reader;

  /**
   * @param {Sandbox} sb
   * @param {import("./transport.mjs").Transport} t
   * @param {string | undefined} path
   */
  constructor(sb, t, path) {
    this.#sb = sb;
    this.#t = t;
    /** The workspace path given to connect (verbatim). */
    this.path = path;
    this.#reader = this.#read();
  }

  /** True once the transport ended (or was disconnected). */
  get ended() {
    return this.#ended;
  }

  // ------------------------------------------------------------ the reader

  async #read() {
    let why = "end of stream";
    for (;;) {
      let frame;
      try {
        frame = await this.#t.recv();
      } catch (e) {
        why = "receive failed";
        break;
      }
      if (frame === null || frame === undefined) break;
      this.#onFrame(frame);
    }
    this.#ended = true;
    this.#endMsg = why;
    for (const c of this.#calls.values()) c.fail(new TransportError(`transport closed: ${why}`));
    this.#calls.clear();
  }

  /** @param {string} text */
  #onFrame(text) {
    let m;
    try {
      m = JSON.parse(text);
    } catch {
      return; // not JSON: ignored
    }
    if (!isPlainObject(m) || m.jsonrpc !== "2.0") return;
    const hasId = "id" in m && (typeof m.id === "number" || typeof m.id === "string");
    if (typeof m.method === "string") {
      const params = isPlainObject(m.params) ? m.params : {};
      if (hasId) {
        if (m.method === "session/request_permission") this.#onPermission(m.id, params);
        else this.#sendQuiet({ jsonrpc: "2.0", id: m.id, error: { code: METHOD_NOT_FOUND, message: "Method not found" } });
      } else if (m.method === "session/update") {
        this.#onUpdate(params);
      }
      return;
    }
    if (Number.isInteger(m.id)) this.#onResponse(m);
  }

  #onResponse(m) {
    const c = this.#calls.get(m.id);
    if (!c) return;
    this.#calls.delete(m.id);
    if (isPlainObject(m.error)) {
      const code = Number.isInteger(m.error.code) ? m.error.code : 0;
      const msg = typeof m.error.message === "string" ? m.error.message : "(no message)";
      c.fail(new RpcError(msg, code, m.error.data));
    } else if (!("result" in m)) {
      c.fail(new ProtocolError("an answer with neither result nor error"));
    } else if (c.adopt) {
      const sid = isPlainObject(m.result) ? m.result.sessionId : undefined;
      if (typeof sid !== "string" || sid === "" || sid.length > MAX_SESSION_ID) {
        c.fail(new ProtocolError("session/new answered without sessionId"));
      } else {
        // Linked here, before the next frame is handled, so that updates that follow
        // the answer (available_commands_update) reach the session.
        c.adopt.id = sid;
        this.#sessions.set(sid, c.adopt);
        c.done(m.result);
      }
    } else {
      c.done(m.result);
    }
  }

  #onUpdate(params) {
    const sid = params.sessionId;
    const u = params.update;
    const s = typeof sid === "string" ? this.#sessions.get(sid) : undefined;
    if (!s || !isPlainObject(u) || !s.handlers.onUpdate) return;
    const content = isPlainObject(u.content) ? u.content : {};
    try {
      s.handlers.onUpdate({
        sessionId: sid,
        kind: typeof u.sessionUpdate === "string" ? u.sessionUpdate : undefined,
        text: typeof content.text === "string" ? content.text : undefined,
        update: u,
      });
    } catch {
      // a throwing handler does not stop the reader
    }
  }

  async #onPermission(id, params) {
    const sid = params.sessionId;
    const s = typeof sid === "string" ? this.#sessions.get(sid) : undefined;
    const tc = isPlainObject(params.toolCall) ? params.toolCall : {};
    const trust = isPlainObject(tc._meta) && Object.hasOwn(tc._meta, "peri.trustRequest");
    let d = Decision.REJECT;
    if (s && s.handlers.onPermission) {
      try {
        d = await s.handlers.onPermission({
          sessionId: sid,
          toolCallId: typeof tc.toolCallId === "string" ? tc.toolCallId : undefined,
          title: typeof tc.title === "string" ? tc.title : undefined,
          trustRequest: trust,
          request: params,
        });
      } catch {
        d = Decision.REJECT;
      }
    }
    const opt = answerOf(Array.isArray(params.options) ? params.options : [], d, trust);
    const outcome = opt ? { outcome: "selected", optionId: opt } : { outcome: "cancelled" };
    this.#sendQuiet({ jsonrpc: "2.0", id, result: { outcome } });
  }

  #sendQuiet(msg) {
    try {
      Promise.resolve(this.#t.send(JSON.stringify(msg))).catch(() => {});
    } catch {
      // the end of the stream reports it
    }
  }

  // ------------------------------------------------------------ requests

  /**
   * Sends method(params) and waits for its answer.
   * @param {string} method
   * @param {object} params
   * @param {{ timeoutMs?: number, promptOf?: Session, adopt?: Session }} [how]
   */
  async _rpc(method, params, how = {}) {
    if (this.#ended) throw new TransportError(`transport closed: ${this.#endMsg}`);
    const id = ++this.#nextId;
    const timeoutMs = how.timeoutMs ?? this.#sb.answerTimeoutMs;
    const c = new Call(how.promptOf, how.adopt);
    this.#calls.set(id, c);
    try {
      await this.#t.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    } catch (e) {
      this.#calls.delete(id);
      throw new TransportError(`cannot send ${method}: the transport failed`, { cause: e });
    }
    let timer;
    if (timeoutMs >= 0) {
      timer = setTimeout(() => {
        if (this.#calls.get(id) === c) this.#calls.delete(id);
        c.fail(new TimeoutError(`no answer to ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
    }
    try {
      return await c.promise;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Sends a notification (no answer).
   * @param {object} msg
   */
  async _send(msg) {
    if (this.#ended) throw new TransportError(`transport closed: ${this.#endMsg}`);
    await this.#t.send(JSON.stringify(msg));
  }

  /** Ends waiting prompts of a session that settled on the host (they end as cancelled). */
  _settled(session) {
    for (const [id, c] of this.#calls) {
      if (c.promptOf === session) {
        this.#calls.delete(id);
        c.done({ stopReason: "cancelled" });
      }
    }
  }

  /** @param {Session} s */
  _unlink(s) {
    if (this.#sessions.get(s.id) === s) this.#sessions.delete(s.id);
  }

  /**
   * initialize with protocol version 1 (and the sandbox's machineId in
   * clientCapabilities._meta."peri.machineId"). Another version is a ProtocolError.
   * @returns {Promise<{ agentInfo: string, result: any }>} agentInfo is "name version"
   */
  async initialize() {
    const meta = {};
    if (this.#sb.machineId !== undefined) meta["peri.machineId"] = this.#sb.machineId;
    const result = await this._rpc("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, _meta: meta },
    });
    const pv = isPlainObject(result) ? result.protocolVersion : undefined;
    if (!Number.isInteger(pv) || pv !== 1) {
      const got = Number.isInteger(pv) ? String(pv) : pv === undefined || pv === null ? "none" : "a non-integer";
      throw new ProtocolError(`unsupported ACP protocol version ${got} (this SDK speaks 1)`);
    }
    const info = isPlainObject(result.agentInfo) ? result.agentInfo : {};
    let agentInfo = "";
    if (typeof info.name === "string")
      agentInfo = typeof info.version === "string" ? `${info.name} ${info.version}` : info.name;
    return { agentInfo, result };
  }

  /**
   * Any request, for extension methods. Waits up to the answer timeout.
   * @param {string} method
   * @param {object} [params] a plain object (default {})
   */
  async request(method, params = {}) {
    if (typeof method !== "string" || method === "") throw new ArgumentError("a method is required");
    if (!isPlainObject(params)) throw new ArgumentError("params must be a JSON object");
    return this._rpc(method, params);
  }

  /**
   * session/new in cwd (default: the agent's path), forwarded verbatim.
   * @param {SessionOptions} [options]
   */
  async newSession(options = {}) {
    const { cwd, handlers } = sessionOptions(options);
    const s = new Session(this, "", handlers);
    await this._rpc("session/new", mcpParams(cwd ?? this.path), { adopt: s });
    return s;
  }

  /**
   * session/load: the history is replayed through onUpdate before this resolves.
   * @param {string} sessionId
   * @param {SessionOptions} [options]
   */
  loadSession(sessionId, options = {}) {
    return this.#loadOrResume("session/load", sessionId, options);
  }

  /**
   * session/resume: no replay.
   * @param {string} sessionId
   * @param {SessionOptions} [options]
   */
  resumeSession(sessionId, options = {}) {
    return this.#loadOrResume("session/resume", sessionId, options);
  }

  async #loadOrResume(method, sid, options) {
    if (typeof sid !== "string" || sid === "" || sid.length > MAX_SESSION_ID)
      throw new ArgumentError("a session id is required");
    const { cwd, handlers } = sessionOptions(options);
    const s = new Session(this, sid, handlers);
    const params = mcpParams(cwd ?? this.path);
    params.sessionId = sid;
    // Linked first: the history replay arrives before the answer.
    const previous = this.#sessions.get(sid);
    this.#sessions.set(sid, s);
    try {
      await this._rpc(method, params);
    } catch (e) {
      if (this.#sessions.get(sid) === s) {
        if (previous) this.#sessions.set(sid, previous);
        else this.#sessions.delete(sid);
      }
      throw e;
    }
    return s;
  }

  /**
   * session/list.
   * @param {{ cwd?: string, cursor?: string }} [options]
   * @returns {Promise<{ sessions: { sessionId: string, cwd?: string, title?: string, _meta?: object }[],
   *                     nextCursor?: string }>}
   */
  async listSessions(options = {}) {
    if (!isPlainObject(options)) throw new ArgumentError("list options must be an object");
    const params = {};
    if (optionalString(options.cwd, "cwd") !== undefined) params.cwd = options.cwd;
    if (optionalString(options.cursor, "cursor") !== undefined) params.cursor = options.cursor;
    const res = await this._rpc("session/list", params);
    const arr = isPlainObject(res) && Array.isArray(res.sessions) ? res.sessions : [];
    const sessions = [];
    for (const o of arr) {
      if (!isPlainObject(o) || typeof o.sessionId !== "string") continue;
      const item = { sessionId: o.sessionId };
      if (typeof o.cwd === "string") item.cwd = o.cwd;
      if (typeof o.title === "string") item.title = o.title;
      if (isPlainObject(o._meta)) item._meta = o._meta;
      sessions.push(item);
    }
    const out = { sessions };
    if (isPlainObject(res) && typeof res.nextCursor === "string") out.nextCursor = res.nextCursor;
    return out;
  }

  /**
   * Disconnects (closes the transport) and waits for the reader to finish. This does
   * NOT close sessions: close them first; the host is left to settle the others.
   */
  async disconnect() {
    await this.#t.close();
    await this.#reader;
  }
}

/**
 * @typedef {object} SessionOptions
 * @property {string} [cwd] forwarded verbatim
 * @property {(u: { sessionId: string, kind?: string, text?: string, update: object }) => void} [onUpdate]
 * @property {(r: { sessionId: string, toolCallId?: string, title?: string, request: object }) =>
 *   ("allow" | "reject" | "cancelled" | Promise<"allow" | "reject" | "cancelled">)} [onPermission]
 *   absent: every permission request is rejected
 */

function sessionOptions(options) {
  if (!isPlainObject(options)) throw new ArgumentError("session options must be an object");
  const cwd = optionalString(options.cwd, "cwd");
  for (const k of ["onUpdate", "onPermission"])
    if (options[k] !== undefined && typeof options[k] !== "function")
      throw new ArgumentError(`${k} must be a function when given`);
  return { cwd, handlers: { onUpdate: options.onUpdate, onPermission: options.onPermission } };
}

function mcpParams(cwd) {
  return cwd !== undefined ? { cwd, mcpServers: [] } : { mcpServers: [] };
}

/** One outstanding request. */
class Call {
  constructor(promptOf, adopt) {
    this.promptOf = promptOf;
    this.adopt = adopt;
    this.promise = new Promise((resolve, reject) => {
      this.done = resolve;
      this.fail = reject;
    });
  }
}

/** A session on the agent. */
export class Session {
  #agent;
  #closed = false;
  /** @type {Promise<void> | null} the running close operation, shared by callers */
  #closing = null;

  constructor(agent, id, handlers) {
    this.#agent = agent;
    /** The session id (set when session/new answers). */
    this.id = id;
    this.handlers = handlers;
  }

  /** True once a close settled on the host. */
  get closed() {
    return this.#closed;
  }

  /**
   * session/prompt with one text block; resolves with the stop reason (end_turn,
   * cancelled, max_tokens, ...) when the turn ends. A turn failure is an RpcError.
   * @param {string} text
   */
  async prompt(text) {
    if (typeof text !== "string") throw new ArgumentError("a session and a text are required");
    if (this.#closed) throw new StateError("the session is closed");
    const res = await this.#agent._rpc(
      "session/prompt",
      { sessionId: this.id, prompt: [{ type: "text", text }] },
      { timeoutMs: -1, promptOf: this },
    );
    return isPlainObject(res) && typeof res.stopReason === "string" ? res.stopReason : "";
  }

  /** session/cancel (a notification; does not wait for the turn). */
  async cancel() {
    try {
      await this.#agent._send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: this.id } });
    } catch (e) {
      throw new TransportError("cannot send session/cancel", { cause: e });
    }
  }

  /**
   * Closes the session on the host: session/close {sessionId}, replayed while the host
   * answers -32010, sleeping min(50 ms, remaining budget) between attempts.
   *   resolves: the host settled; the session is closed (a later close sends nothing)
   *   SessionCloseIncompleteError: budget exhausted; the session and the transport
   *     stay open, call close again
   *   any other error of the first attempt: thrown unchanged
   * Concurrent closes share one operation and its result.
   * @param {number} [budgetMs] default 3000; 0 = exactly one attempt
   */
  close(budgetMs = CLOSE_BUDGET_DEFAULT_MS) {
    if (typeof budgetMs !== "number" || !Number.isSafeInteger(budgetMs) || budgetMs < 0)
      return Promise.reject(
        new ArgumentError(
          `close budget must be a non-negative safe integer of milliseconds, got ${String(budgetMs)}`,
        ),
      );
    if (this.#closed) return Promise.resolve(); // a no-op: nothing is sent
    if (this.#closing) return this.#closing; // join the running operation
    this.#closing = this.#closeOp(budgetMs).then(
      () => {
        this.#closed = true;
        this.#closing = null;
        this.#agent._settled(this);
        this.#agent._unlink(this);
      },
      (e) => {
        this.#closing = null;
        throw e;
      },
    );
    return this.#closing;
  }

  async #closeOp(budgetMs) {
    const deadline = performance.now() + budgetMs;
    /** @type {import("./errors.mjs").SdkError | null} */
    let incomplete = null;
    for (;;) {
      try {
        await this.#agent._rpc("session/close", { sessionId: this.id });
        return;
      } catch (e) {
        if (e instanceof RpcError && e.rpcCode === PSDK_RPC_CLOSE_INCOMPLETE) {
          incomplete = e;
          const now = performance.now();
          if (now >= deadline) throw new SessionCloseIncompleteError(e.message, [e]);
          await sleepUntil(Math.min(now + CLOSE_REPLAY_MS, deadline));
          continue;
        }
        if (!incomplete) throw e; // unchanged
        // A different failure after an incomplete attempt: still incomplete, and both
        // causes are kept.
        throw new SessionCloseIncompleteError(e.message, [incomplete, e]);
      }
    }
  }
}
