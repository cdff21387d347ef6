// ports.mjs — the host-owned ports of one agent-host instance (docs/wasm-host.md,
// include/peri/net.h) over Node's net, tls, dns and timers: byte streams, name
// resolution, timers and clocks, as one event-driven handle table.
//
// Invariants (the ABI's rules):
//   - every call returns at once; the outcome of open/resolve/timer_set arrives later
//     as an event through the emit callback, never from inside the call;
//   - reads are pulled from a bounded per-stream buffer; while it is full the socket is
//     paused (back-pressure) and resumed once the module has read it down;
//   - writes are queued up to a bound (PortError.LIMIT beyond it); after a LIMIT one
//     WRITABLE event follows once the queue has drained to half the bound or less;
//   - a handle given up by its owner (close, resolveCancel, timerCancel) or closed by
//     closeAll() gets only its settling event: an opened, readable or writable event
//     still queued is dropped at delivery (emit's `stale` says so);
//   - every handle returned ends with exactly one settling event (CLOSED for a stream,
//     RESOLVED for a resolution, TIMER for a timer); a handle leaves the table only
//     when its settling event has been delivered;
//   - a destination is opened only when the policy grants it (default: nothing);
//   - closeAll() settles every open handle with CLOSED and resolves with a report once
//     all settling events are delivered; a connect or handshake deadline is TIMEOUT,
//     never a close or a stop;
//   - starttls upgrades an open clear stream in place (tls.connect over its socket) only
//     when nothing is unread or queued in the clear; its outcome is one TLS event (a
//     failure also settles the stream); meanwhile reads say AGAIN and writes wait.

import net from "node:net";
import tls from "node:tls";
import dns from "node:dns";

/** pn_err: the typed outcome of every port call and event (numbers are the ABI's). */
export const PortError = Object.freeze({
  OK: 0,
  AGAIN: -1,
  INVALID: -2,
  DENIED: -3,
  NOT_FOUND: -4,
  REFUSED: -5,
  UNREACHABLE: -6,
  TIMEOUT: -7,
  TLS: -8,
  RESET: -9,
  CLOSED: -10,
  CANCELLED: -11,
  LIMIT: -12,
  IO: -13,
});

/** Event kinds of peri_port_event. */
export const EventKind = Object.freeze({ OPENED: 1, READABLE: 2, CLOSED: 3, RESOLVED: 4, TIMER: 5, WRITABLE: 6, TLS: 7 });

/** A name (host, SNI, resolution): 1–253 letters, digits and .-_: (docs/wasm-host.md). */
const NAME_RE = /^[A-Za-z0-9._:-]{1,253}$/;
/** RFC 6761: names under .invalid never resolve (no resolver is asked). */
const isInvalidTld = (name) => /(^|\.)invalid\.?$/i.test(name);

const ERR_NAMES = new Map(Object.entries(PortError).map(([k, v]) => [v, k.toLowerCase()]));

/** English name of a port error ("refused", "timeout", ...). */
export function portErrorName(code) {
  return ERR_NAMES.get(code) ?? "unknown";
}

export const PORT_DEFAULTS = Object.freeze({
  readBuffer: 256 * 1024,
  writeQueue: 64 * 1024 * 1024,
  maxHandles: 1024,
  connectTimeoutMs: 30000,
  resolveTimeoutMs: 30000,
});

const MAX_TIMER_CHUNK = 0x7fffffff; // setTimeout's limit; longer delays are re-armed

/** Maps a Node socket or DNS failure to a port error. */
export function portErrorOf(e, tlsPending = false) {
  switch (e?.code) {
    case "ECONNREFUSED":
      return PortError.REFUSED;
    case "ENETUNREACH":
    case "EHOSTUNREACH":
    case "ENETDOWN":
    case "EHOSTDOWN":
      return PortError.UNREACHABLE;
    case "ECONNRESET":
    case "EPIPE":
    case "ECONNABORTED":
      return PortError.RESET;
    case "ENOTFOUND":
    case "EAI_NONAME":
    case "EAI_NODATA":
    case "ENODATA":
      return PortError.NOT_FOUND;
    case "ETIMEDOUT":
      return PortError.TIMEOUT;
    default:
      if (typeof e?.code === "string" && /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(e.code))
        return PortError.TLS;
      if (/certificate|handshake|ssl|tls/i.test(String(e?.message ?? ""))) return PortError.TLS;
      return tlsPending ? PortError.TLS : PortError.IO;
  }
}

/**
 * A destination policy: an array of grants ("host:port", "host:*", or
 * { host, port? }) or a function (name, addr, port) => boolean, called with the name
 * given to open (addr null) and with each resolved numeric address (name null).
 * With an array, addresses resolved from a granted name are granted; a numeric
 * address is granted only when listed itself. undefined/null grants nothing.
 * @returns {(name: string | null, addr: string | null, port: number) => boolean}
 */
export function makePolicy(allow) {
  if (allow === undefined || allow === null) return () => false;
  if (typeof allow === "function") {
    return (name, addr, port) => {
      try {
        return allow(name, addr, port) === true;
      } catch {
        return false;
      }
    };
  }
  if (!Array.isArray(allow)) throw new TypeError("allow must be an array of grants or a function");
  const grants = allow.map((g) => {
    if (typeof g === "string") {
      const i = g.lastIndexOf(":");
      if (i <= 0) throw new TypeError(`a grant must be "host:port" or "host:*", got "${g}"`);
      const host = g.slice(0, i).replace(/^\[(.*)\]$/, "$1").toLowerCase();
      const p = g.slice(i + 1);
      if (p !== "*" && !/^\d{1,5}$/.test(p)) throw new TypeError(`a grant's port must be a number or *, got "${g}"`);
      return { host, port: p === "*" ? null : Number(p) };
    }
    if (g && typeof g === "object" && typeof g.host === "string")
      return { host: g.host.toLowerCase(), port: g.port ?? null };
    throw new TypeError("a grant must be \"host:port\" or { host, port }");
  });
  return (name, addr, port) => {
    if (name !== null) {
      const n = name.toLowerCase();
      return grants.some((g) => g.host === n && (port === 0 || g.port === null || g.port === port));
    }
    return true; // an address resolved from a granted name
  };
}

/**
 * The handle table of one instance.
 * emit(kind, handle, err, payload, delivered, stale): queue an event for the module;
 * the host calls delivered() once it has been handed over (or dropped, when the module
 * can no longer take events). stale, given for the events that do not settle, returns
 * true when the event must not reach the module any more (its handle was given up).
 */
export class Ports {
  #emit;
  #policy;
  #limits;
  #tls;
  /** @type {Map<number, any>} */
  #handles = new Map();
  #next = 0;
  #closedAll = false;
  /** @type {(() => void)[]} */
  #idle = [];
  #counts = { streams: 0, resolutions: 0, timers: 0 };
  /** @type {Promise<object> | null} the one close-all (nothing opens after it) */
  #closeAll = null;

  /**
   * @param {{ emit: Function, allow?: any, limits?: Partial<typeof PORT_DEFAULTS>,
   *           tls?: import("node:tls").ConnectionOptions }} o
   */
  constructor(o) {
    this.#emit = o.emit;
    this.#policy = makePolicy(o.allow);
    if (o.limits !== undefined && (o.limits === null || typeof o.limits !== "object"))
      throw new TypeError("limits must be an object");
    for (const k of Object.keys(o.limits ?? {}))
      if (!(k in PORT_DEFAULTS)) throw new TypeError(`limits.${k} is not a limit (${Object.keys(PORT_DEFAULTS).join(", ")})`);
    this.#limits = { ...PORT_DEFAULTS, ...(o.limits ?? {}) };
    for (const [k, v] of Object.entries(this.#limits)) {
      if (!Number.isSafeInteger(v) || v <= 0) throw new TypeError(`limits.${k} must be a positive integer`);
      if (k.endsWith("Ms") && v > MAX_TIMER_CHUNK) throw new TypeError(`limits.${k} must be at most ${MAX_TIMER_CHUNK} ms`);
    }
    this.#tls = o.tls ?? {};
  }

  /** Number of handles not yet settled. */
  get pending() {
    return this.#handles.size;
  }

  /** What a stream holds now (for tests and diagnostics). */
  streamStats(h) {
    const e = this.#handles.get(h);
    if (!e || e.type !== "stream") return null;
    return { buffered: e.bufLen, paused: e.paused, state: e.state, queued: e.socket ? e.socket.writableLength : 0 };
  }

  #newHandle(entry) {
    if (this.#handles.size >= this.#limits.maxHandles) return 0;
    do this.#next = this.#next >= 0xffffffff ? 1 : this.#next + 1;
    while (this.#handles.has(this.#next));
    entry.handle = this.#next;
    entry.settled = false;
    this.#handles.set(this.#next, entry);
    return this.#next;
  }

  /** Queues the settling event; the handle leaves the table when it is delivered. */
  #settle(e, kind, err, payload) {
    if (e.settled) return;
    e.settled = true;
    clearTimeout(e.deadline);
    if (e.timer) clearTimeout(e.timer);
    if (e.socket) e.socket.destroy();
    this.#emit(kind, e.handle, err, payload, () => {
      this.#handles.delete(e.handle);
      if (this.#handles.size === 0) for (const f of this.#idle.splice(0)) f();
    });
  }

  #detail(text) {
    return Buffer.from(String(text), "utf8");
  }

  // ------------------------------------------------------------ streams

  /**
   * @param {string} host @param {number} port @param {boolean} useTls @param {string} sni
   * @returns {[number, number]} [err, handle]
   */
  open(host, port, useTls, sni) {
    if (this.#closedAll) return [PortError.CLOSED, 0];
    if (!NAME_RE.test(host) || !(port >= 1 && port <= 65535)) return [PortError.INVALID, 0];
    if (sni !== "" && !NAME_RE.test(sni)) return [PortError.INVALID, 0];
    if (!this.#policy(host, null, port)) return [PortError.DENIED, 0];
    const e = {
      type: "stream",
      host,
      state: "opening",
      socket: null,
      chunks: [],
      bufLen: 0,
      eof: false,
      paused: false,
      readablePending: false,
      shut: false,
      wantWritable: false,
      deadline: null,
    };
    const h = this.#newHandle(e);
    if (!h) return [PortError.LIMIT, 0];
    this.#counts.streams++;
    e.deadline = setTimeout(() => this.#openFailed(e, PortError.TIMEOUT, `no connection to ${host}:${port} within ${this.#limits.connectTimeoutMs} ms`), this.#limits.connectTimeoutMs);
    this.#connect(e, host, port, useTls, sni || host);
    return [PortError.OK, h];
  }

  async #connect(e, host, port, useTls, servername) {
    let addrs;
    if (net.isIP(host)) {
      addrs = [host];
    } else if (isInvalidTld(host)) {
      return this.#openFailed(e, PortError.NOT_FOUND, `cannot resolve ${host}: a name under .invalid never resolves`);
    } else {
      try {
        addrs = (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
      } catch (err) {
        return this.#openFailed(e, portErrorOf(err), `cannot resolve ${host}: ${err.message}`);
      }
    }
    if (e.settled) return;
    const granted = addrs.filter((a) => this.#policy(null, a, port));
    if (!granted.length) return this.#openFailed(e, PortError.DENIED, `${host} resolves to no granted address`);
    this.#attempt(e, granted, 0, port, useTls, servername);
  }

  /** Connects to addrs[i]; an address whose TCP connect fails falls through to the next
   * (the last one's error is reported); a TLS handshake failure ends the stream. */
  #attempt(e, addrs, i, port, useTls, servername) {
    if (e.settled) return;
    const opts = { host: addrs[i], port };
    const s = useTls
      ? tls.connect({ ...this.#tls, ...opts, servername: net.isIP(servername) ? undefined : servername,
          checkServerIdentity: (_h, cert) => tls.checkServerIdentity(servername, cert) })
      : net.connect(opts);
    e.socket = s;
    e.tls = useTls;
    let tcp = false; // the TCP connection stands (a later failure is not the address's)
    s.once("connect", () => (tcp = true));
    s.once(useTls ? "secureConnect" : "connect", () => this.#ready(e, s, EventKind.OPENED));
    this.#wire(e, s, (err) => {
      if (!err) return this.#openFailed(e, PortError.RESET, "the connection closed during the handshake");
      const code = portErrorOf(err, e.tls);
      if (!tcp && i + 1 < addrs.length) {
        s.destroy();
        return this.#attempt(e, addrs, i + 1, port, useTls, servername);
      }
      return this.#openFailed(e, code, err.message);
    });
  }

  /** The connect (OPENED) or the starttls handshake (TLS) succeeded on socket s. */
  #ready(e, s, kind) {
    if (e.settled || e.socket !== s) return;
    clearTimeout(e.deadline);
    e.state = "open";
    for (const b of e.early?.splice(0) ?? []) s.write(b, () => this.#checkWritable(e)); // written meanwhile
    if (e.shut) s.end();
    this.#checkWritable(e);
    this.#emit(kind, e.handle, PortError.OK, null, () => {}, () => e.quiet);
    if (e.bufLen || e.eof) this.#signalReadable(e); // arrived with the handshake
  }

  /** The stream's handlers on socket s (the one it opened, or the TLS socket of a
   * starttls): a failure before it is open goes to early(err), err null for a close. */
  #wire(e, s, early) {
    s.on("data", (chunk) => {
      if (e.settled || e.socket !== s) return;
      e.chunks.push(chunk);
      e.bufLen += chunk.length;
      if (e.bufLen >= this.#limits.readBuffer && !e.paused) {
        e.paused = true;
        s.pause();
      }
      this.#signalReadable(e);
    });
    s.on("drain", () => this.#checkWritable(e));
    s.on("end", () => {
      if (e.socket !== s) return;
      e.eof = true;
      this.#signalReadable(e);
    });
    s.on("error", (err) => {
      if (e.settled || e.socket !== s) return;
      if (e.state !== "open") return early(err);
      this.#settle(e, EventKind.CLOSED, portErrorOf(err), this.#detail(err.message));
    });
    s.on("close", () => {
      if (e.settled || e.socket !== s) return;
      if (e.state !== "open") return early(null);
      // The peer closed both ways: the module reads the end of the stream, then closes.
      e.eof = true;
      this.#signalReadable(e);
    });
  }

  /** The upgrade failed: the TLS event with the error, then the stream settles. */
  #upgradeFailed(e, code, detail) {
    if (e.settled) return;
    e.state = "failed";
    this.#emit(EventKind.TLS, e.handle, code, this.#detail(detail), () => {}, () => e.quiet);
    this.#settle(e, EventKind.CLOSED, code, this.#detail(detail));
  }

  #openFailed(e, code, detail) {
    if (e.settled) return;
    e.state = "failed";
    this.#emit(EventKind.OPENED, e.handle, code, this.#detail(detail), () => {}, () => e.quiet);
    this.#settle(e, EventKind.CLOSED, code, this.#detail(detail));
  }

  #signalReadable(e) {
    if (e.readablePending || e.settled || e.state !== "open") return;
    e.readablePending = true;
    this.#emit(EventKind.READABLE, e.handle, PortError.OK, null, () => {
      e.readablePending = false;
    }, () => e.quiet);
  }

  /** Bytes queued for the network: the socket's queue, or what was written while opening. */
  #queued(e) {
    if (e.state === "open") return e.socket.writableLength;
    return (e.early ?? []).reduce((n, b) => n + b.length, 0);
  }

  /** After a LIMIT: one WRITABLE once the queue is at half the bound or less. */
  #checkWritable(e) {
    if (!e.wantWritable || e.settled || e.state !== "open") return;
    if (this.#queued(e) > this.#limits.writeQueue / 2) return;
    e.wantWritable = false;
    this.#emit(EventKind.WRITABLE, e.handle, PortError.OK, null, () => {}, () => e.quiet);
  }

  #stream(h) {
    const e = this.#handles.get(h);
    return e && e.type === "stream" && !e.settled ? e : null;
  }

  /** A handle whose settling event is queued but not yet delivered: still the module's. */
  #settling(h, type) {
    const e = this.#handles.get(h);
    return !!e && e.type === type && e.settled;
  }

  /** @returns {[number, Buffer | null]} [err, bytes] (bytes empty with OK: end of stream) */
  read(h, cap) {
    if (!(cap > 0)) return [PortError.INVALID, null]; // no room: not to be taken for the end
    const e = this.#stream(h);
    if (!e) return [this.#settling(h, "stream") ? PortError.CLOSED : PortError.INVALID, null];
    if (e.state !== "open") return [PortError.AGAIN, null];
    if (e.bufLen === 0) {
      if (e.eof) return [PortError.OK, Buffer.alloc(0)];
      return [PortError.AGAIN, null];
    }
    const parts = [];
    let got = 0;
    while (got < cap && e.chunks.length) {
      const c = e.chunks[0];
      const take = Math.min(cap - got, c.length);
      parts.push(c.subarray(0, take));
      got += take;
      if (take === c.length) e.chunks.shift();
      else e.chunks[0] = c.subarray(take);
    }
    e.bufLen -= got;
    if (e.paused && e.bufLen < this.#limits.readBuffer / 2) {
      e.paused = false;
      e.socket.resume();
    }
    return [PortError.OK, Buffer.concat(parts, got)];
  }

  /** @param {Uint8Array} bytes copied before return */
  write(h, bytes) {
    const e = this.#stream(h);
    if (!e) return this.#settling(h, "stream") ? PortError.CLOSED : PortError.INVALID;
    if (e.shut) return PortError.CLOSED;
    if (bytes.length === 0) return PortError.OK;
    if (this.#queued(e) + bytes.length > this.#limits.writeQueue) {
      // one WRITABLE follows once the queue has drained to half the bound or less
      if (!e.wantWritable) {
        e.wantWritable = true;
        setImmediate(() => this.#checkWritable(e)); // already at half or less: never from inside the call
      }
      return PortError.LIMIT;
    }
    if (e.state !== "open") {
      // still opening: kept until connected (an address that fails loses nothing)
      (e.early ??= []).push(Buffer.from(bytes));
      return PortError.OK;
    }
    e.socket.write(Buffer.from(bytes), () => this.#checkWritable(e));
    return PortError.OK;
  }

  shutdown(h) {
    const e = this.#stream(h);
    if (!e) return this.#settling(h, "stream") ? PortError.CLOSED : PortError.INVALID;
    if (!e.shut) {
      e.shut = true;
      if (e.state === "open") e.socket.end(); // else the connect ends it after the early bytes
    }
    return PortError.OK;
  }

  /**
   * Upgrades an open clear stream to TLS in place (docs/wasm-host.md): the same trust
   * options and name check as a TLS open; sni "" means the host given to open.
   * INVALID unless open, clear, not shut down and with nothing queued; TLS when bytes
   * that came in the clear are still unread (a man in the middle may have sent them).
   */
  starttls(h, sni) {
    const e = this.#stream(h);
    if (!e) return this.#settling(h, "stream") ? PortError.CLOSED : PortError.INVALID;
    if (sni !== "" && !NAME_RE.test(sni)) return PortError.INVALID;
    if (e.state !== "open" || e.tls || e.shut || this.#queued(e) > 0) return PortError.INVALID;
    if (e.bufLen > 0) return PortError.TLS;
    if (e.eof) return PortError.CLOSED;
    const servername = sni || e.host;
    const ts = tls.connect({ ...this.#tls, socket: e.socket, servername: net.isIP(servername) ? undefined : servername,
      checkServerIdentity: (_h, cert) => tls.checkServerIdentity(servername, cert) });
    e.socket = ts;
    e.tls = true;
    e.state = "upgrading";
    e.deadline = setTimeout(() => this.#upgradeFailed(e, PortError.TIMEOUT,
      `no TLS handshake after starttls with ${e.host} within ${this.#limits.connectTimeoutMs} ms`), this.#limits.connectTimeoutMs);
    ts.once("secureConnect", () => this.#ready(e, ts, EventKind.TLS));
    this.#wire(e, ts, (err) => this.#upgradeFailed(e, err ? portErrorOf(err, true) : PortError.TLS,
      err ? err.message : "TLS handshake after starttls: the peer closed"));
    return PortError.OK;
  }

  close(h) {
    const e = this.#stream(h);
    if (!e) return this.#settling(h, "stream") ? PortError.OK : PortError.INVALID;
    e.quiet = true;
    this.#settle(e, EventKind.CLOSED, PortError.OK, null);
    return PortError.OK;
  }

  // ------------------------------------------------------------ resolution

  /** @returns {[number, number]} */
  resolve(name) {
    if (this.#closedAll) return [PortError.CLOSED, 0];
    if (!NAME_RE.test(name)) return [PortError.INVALID, 0];
    if (!this.#policy(name, null, 0)) return [PortError.DENIED, 0];
    const e = { type: "resolve", deadline: null };
    const h = this.#newHandle(e);
    if (!h) return [PortError.LIMIT, 0];
    this.#counts.resolutions++;
    e.deadline = setTimeout(
      () => this.#settle(e, EventKind.RESOLVED, PortError.TIMEOUT, this.#detail(`no answer for ${name} within ${this.#limits.resolveTimeoutMs} ms`)),
      this.#limits.resolveTimeoutMs,
    );
    const done = (addrs) => this.#settle(e, EventKind.RESOLVED, PortError.OK, Buffer.from(addrs.join("\0"), "utf8"));
    if (net.isIP(name)) {
      setImmediate(() => done([name]));
    } else if (isInvalidTld(name)) {
      setImmediate(() => this.#settle(e, EventKind.RESOLVED, PortError.NOT_FOUND, this.#detail(`cannot resolve ${name}: a name under .invalid never resolves`)));
    } else {
      dns.promises.lookup(name, { all: true }).then(
        (list) => done([...new Set(list.map((a) => a.address))]),
        (err) => this.#settle(e, EventKind.RESOLVED, portErrorOf(err), this.#detail(`cannot resolve ${name}: ${err.code ?? err.message}`)),
      );
    }
    return [PortError.OK, h];
  }

  resolveCancel(h) {
    if (this.#settling(h, "resolve")) return PortError.OK; // too late: its outcome is on the way
    const e = this.#handles.get(h);
    if (!e || e.type !== "resolve") return PortError.INVALID;
    this.#settle(e, EventKind.RESOLVED, PortError.CANCELLED, this.#detail("cancelled by its owner"));
    return PortError.OK;
  }

  // ------------------------------------------------------------ timers and clocks

  nowMs() {
    return BigInt(Math.floor(performance.now()));
  }

  wallMs() {
    return BigInt(Date.now());
  }

  /** @param {bigint} delay @returns {[number, number]} */
  timerSet(delay) {
    if (this.#closedAll) return [PortError.CLOSED, 0];
    if (delay < 0n || delay > BigInt(Number.MAX_SAFE_INTEGER)) return [PortError.INVALID, 0];
    const e = { type: "timer", timer: null };
    const h = this.#newHandle(e);
    if (!h) return [PortError.LIMIT, 0];
    this.#counts.timers++;
    const due = performance.now() + Number(delay);
    const arm = () => {
      const left = due - performance.now();
      if (left > MAX_TIMER_CHUNK) e.timer = setTimeout(arm, MAX_TIMER_CHUNK);
      else e.timer = setTimeout(() => this.#settle(e, EventKind.TIMER, PortError.OK, null), Math.max(0, left));
    };
    arm();
    return [PortError.OK, h];
  }

  timerCancel(h) {
    if (this.#settling(h, "timer")) return PortError.OK; // too late: it fired
    const e = this.#handles.get(h);
    if (!e || e.type !== "timer") return PortError.INVALID;
    this.#settle(e, EventKind.TIMER, PortError.CANCELLED, this.#detail("cancelled by its owner"));
    return PortError.OK;
  }

  // ------------------------------------------------------------ close-all

  /**
   * Closes every open handle (each settles with CLOSED) and refuses new ones.
   * Resolves once every settling event was delivered, with what was closed; later
   * calls return the same promise.
   * @returns {Promise<{ settled: true, closed: { streams: number, resolutions: number,
   *   timers: number }, total: { streams: number, resolutions: number, timers: number } }>}
   */
  closeAll() {
    this.#closeAll ??= this.#closeEverything();
    return this.#closeAll;
  }

  #closeEverything() {
    this.#closedAll = true;
    const closed = { streams: 0, resolutions: 0, timers: 0 };
    for (const e of this.#handles.values()) {
      if (e.settled) continue;
      closed[{ stream: "streams", resolve: "resolutions", timer: "timers" }[e.type]]++;
      const kind = { stream: EventKind.CLOSED, resolve: EventKind.RESOLVED, timer: EventKind.TIMER }[e.type];
      e.quiet = true;
      this.#settle(e, kind, PortError.CLOSED, this.#detail("the port was closed by the host"));
    }
    const report = () => ({ settled: true, closed, total: { ...this.#counts } });
    if (this.#handles.size === 0) return Promise.resolve(report());
    return new Promise((resolve) => this.#idle.push(() => resolve(report())));
  }
}
