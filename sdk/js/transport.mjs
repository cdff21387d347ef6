// transport.mjs — frame transports for the SDK: newline-delimited JSON-RPC over any
// pair of Node streams, and the stdio helper that starts an agent command (default
// `peri acp`) and talks to it over its stdin/stdout.
//
// A transport is the object the SDK's transportFactory returns:
//   send(frame)  one JSON-RPC message without its newline; may return a promise;
//                throws (or rejects) when the transport failed
//   recv()       a promise of the next frame, or null at the end of the stream; it
//                rejects when the stream failed or a frame is too long
//   close()      disconnects (ends the output, destroys the input) and makes a pending
//                recv() resolve null; idempotent; may return a promise (the stdio
//                helper's resolves once the child is reaped)
//
// The stdio helper is the only place in the SDK that starts a process. Arguments go to
// the child as given (no shell); the workspace path is forwarded verbatim as --cwd.

import { spawn } from "node:child_process";
import { TransportError, ArgumentError } from "./errors.mjs";

/** Longest frame accepted (the C SDK's bound). */
export const MAX_FRAME = 64 * 1024 * 1024;

/**
 * @typedef {object} Transport
 * @property {(frame: string) => (void | Promise<void>)} send
 * @property {() => Promise<string | null>} recv
 * @property {() => (void | Promise<void>)} close
 */

/**
 * A transport over a readable and a writable byte stream (newline-delimited frames;
 * blank lines are keep-alives and skipped; a trailing "\r" is dropped).
 * @param {import("node:stream").Readable} input the agent's output (frames arrive here)
 * @param {import("node:stream").Writable} output the agent's input (frames go here)
 * @param {{ onClose?: () => (void | Promise<void>), maxFrame?: number }} [options]
 * @returns {Transport}
 */
export function streamTransport(input, output, options = {}) {
  if (!input || typeof input.on !== "function")
    throw new ArgumentError("streamTransport needs a readable stream as its first argument");
  if (!output || typeof output.write !== "function")
    throw new ArgumentError("streamTransport needs a writable stream as its second argument");
  const maxFrame = options.maxFrame ?? MAX_FRAME;
  /** @type {string[]} */
  const frames = [];
  /** @type {{ resolve: (v: string | null) => void, reject: (e: Error) => void }[]} */
  const waiters = [];
  /** @type {Buffer[]} */
  let partial = [];
  let partialLen = 0;
  let ended = false;
  /** @type {Error | null} */
  let failure = null;
  let closed = false;
  /** @type {Promise<void> | null} */
  let closing = null;

  const settleWaiters = () => {
    while (waiters.length && frames.length) waiters.shift().resolve(frames.shift());
    if (!ended && !closed) return;
    while (waiters.length) {
      const w = waiters.shift();
      if (failure && !closed) w.reject(failure);
      else w.resolve(null);
    }
  };
  const pushLine = (buf) => {
    let text = buf.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return; // a keep-alive
    frames.push(text);
  };
  const onData = (chunk) => {
    if (ended || closed) return;
    const buf = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(10, start);
      if (nl < 0) break;
      const piece = buf.subarray(start, nl);
      if (partialLen) {
        partial.push(piece);
        pushLine(Buffer.concat(partial, partialLen + piece.length));
        partial = [];
        partialLen = 0;
      } else {
        pushLine(piece);
      }
      start = nl + 1;
    }
    if (start < buf.length) {
      const rest = Buffer.from(buf.subarray(start)); // a copy: the chunk may be reused
      partial.push(rest);
      partialLen += rest.length;
      if (partialLen > maxFrame) {
        failure = new TransportError(`a frame longer than ${maxFrame} bytes`);
        ended = true;
        partial = [];
        partialLen = 0;
      }
    }
    settleWaiters();
  };
  const onEnd = () => {
    ended = true;
    settleWaiters();
  };
  const onError = (e) => {
    if (!failure) failure = new TransportError(`receive failed: ${e.message}`, { cause: e });
    ended = true;
    settleWaiters();
  };
  input.on("data", onData);
  input.on("end", onEnd);
  input.on("close", onEnd);
  input.on("error", onError);
  output.on?.("error", () => {}); // a write failure is reported by send()

  return {
    send(frame) {
      if (typeof frame !== "string") throw new ArgumentError("a frame must be a string");
      if (closed) throw new TransportError("cannot send: the transport is closed");
      return new Promise((resolve, reject) => {
        try {
          output.write(frame + "\n", (err) =>
            err ? reject(new TransportError(`send failed: ${err.message}`, { cause: err })) : resolve(),
          );
        } catch (err) {
          reject(new TransportError(`send failed: ${err.message}`, { cause: err }));
        }
      });
    },
    recv() {
      if (frames.length) return Promise.resolve(frames.shift());
      if (closed) return Promise.resolve(null);
      if (ended) return failure ? Promise.reject(failure) : Promise.resolve(null);
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    close() {
      if (closing) return closing;
      closed = true;
      input.off("data", onData);
      input.destroy?.(); // as the C SDK closes its read end: the peer's writes now fail
      settleWaiters();
      closing = (async () => {
        try {
          output.end?.();
        } catch {
          // already ended
        }
        if (options.onClose) await options.onClose();
      })();
      return closing;
    },
  };
}

/**
 * Waits up to ms for a child to exit; true when it has.
 * @param {import("node:child_process").ChildProcess} child
 * @param {number} ms
 */
function exitWithin(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      child.off("exit", onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(t);
      resolve(true);
    };
    child.once("exit", onExit);
  });
}

/**
 * The stdio helper: a transportFactory that starts the agent command with its
 * stdin/stdout as the transport. With no argv the command is `peri acp` (options.peri,
 * default "peri" on PATH) with --cwd PATH, --db STORE and --machine-id ID from the
 * connect request when given (the credential is never put on a command line). An
 * explicit argv runs as is. stderr is inherited unless options.stderr says otherwise.
 * Closing the transport closes the agent's stdin, waits exitWaitMs (default 5000) for
 * it to exit, then SIGTERM, then (2 s later) SIGKILL.
 * @param {{ argv?: string[], peri?: string, env?: Record<string,string>,
 *           exitWaitMs?: number, stderr?: "inherit" | "ignore" | "pipe" }} [options]
 * @returns {(c: ConnectRequest) => Promise<Transport>}
 */
export function stdioTransportFactory(options = {}) {
  if (options.argv !== undefined) {
    if (!Array.isArray(options.argv) || options.argv.some((a) => typeof a !== "string"))
      throw new ArgumentError("stdioTransportFactory: argv must be an array of strings");
    if (options.argv.length === 0 || options.argv[0] === "")
      throw new ArgumentError("empty agent command");
  }
  const exitWaitMs = options.exitWaitMs > 0 ? options.exitWaitMs : 5000;
  return async (c) => {
    let argv = options.argv;
    if (!argv) {
      argv = [options.peri || "peri", "acp"];
      if (c.path != null) argv.push("--cwd", c.path);
      if (c.storeLocator != null) argv.push("--db", c.storeLocator);
      if (c.machineId != null) argv.push("--machine-id", c.machineId);
    }
    const child = spawn(argv[0], argv.slice(1), {
      stdio: ["pipe", "pipe", options.stderr ?? "inherit"],
      env: options.env, // undefined: inherit ours
    });
    try {
      await new Promise((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", reject);
      });
    } catch (e) {
      throw new TransportError(`cannot start ${argv[0]}: ${e.message}`, { cause: e });
    }
    child.on("error", () => {}); // later failures end the stream
    child.stdin.on("error", () => {});
    const reap = async () => {
      if (await exitWithin(child, exitWaitMs)) return;
      child.kill("SIGTERM");
      if (await exitWithin(child, 2000)) return;
      child.kill("SIGKILL");
      await exitWithin(child, 60000);
    };
    const t = streamTransport(child.stdout, child.stdin, { onClose: reap });
    return Object.assign(t, { child });
  };
}

/**
 * @typedef {object} ConnectRequest what a transportFactory is given (all verbatim)
 * @property {string | undefined} path the workspace path (never resolved locally)
 * @property {string | undefined} storeLocator
 * @property {string | undefined} credential
 * @property {string | undefined} machineId
 */
