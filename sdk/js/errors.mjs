// errors.mjs — the SDK's typed errors, mirroring libperi-sdk (include/peri/sdk.h).
//
// Every error the SDK throws is an SdkError with `status` (the C status name: "ARG",
// "TRANSPORT", "RPC", "PROTOCOL", "TIMEOUT", "SESSION_CLOSE_INCOMPLETE", "STATE") and
// `code` (the C psdk_status value). RpcError also carries `rpcCode` (the agent's
// JSON-RPC error code) and `data`. SessionCloseIncompleteError carries `causes`: the
// last incomplete (-32010) answer and, when a different failure followed an incomplete
// attempt, that failure too. Messages are the C SDK's texts.

/** The only JSON-RPC code a session close replays ("incomplete, retry"). */
export const PSDK_RPC_CLOSE_INCOMPLETE = -32010;
/** Default close budget in milliseconds. */
export const CLOSE_BUDGET_DEFAULT_MS = 3000;
/** Pause between two close attempts (the last pause is the remaining budget). */
export const CLOSE_REPLAY_MS = 50;

/** The C SDK's psdk_status values, by name. */
export const STATUS = Object.freeze({
  OK: 0,
  ARG: 1,
  TRANSPORT: 2,
  RPC: 3,
  PROTOCOL: 4,
  TIMEOUT: 5,
  SESSION_CLOSE_INCOMPLETE: 6,
  STATE: 7,
  NOMEM: 8,
});

/** Base class of every SDK error. */
export class SdkError extends Error {
  /**
   * @param {keyof typeof STATUS} status
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(status, message, options) {
    super(message, options);
    this.name = "SdkError";
    /** @type {string} */
    this.status = status;
    /** @type {number} */
    this.code = STATUS[status];
  }
}

/** A bad argument; nothing was sent. */
export class ArgumentError extends SdkError {
  constructor(message, options) {
    super("ARG", message, options);
    this.name = "ArgumentError";
  }
}

/** The transport failed or ended. */
export class TransportError extends SdkError {
  constructor(message, options) {
    super("TRANSPORT", message, options);
    this.name = "TransportError";
  }
}

/** The agent answered a JSON-RPC error. */
export class RpcError extends SdkError {
  /**
   * @param {string} message the agent's error message
   * @param {number} rpcCode the agent's JSON-RPC error code
   * @param {unknown} [data] the error's data member, if any
   */
  constructor(message, rpcCode, data) {
    super("RPC", message);
    this.name = "RpcError";
    this.rpcCode = rpcCode;
    if (data !== undefined) this.data = data;
  }
}

/** The agent spoke a protocol this SDK does not (another version, a bad frame). */
export class ProtocolError extends SdkError {
  constructor(message, options) {
    super("PROTOCOL", message, options);
    this.name = "ProtocolError";
  }
}

/** No answer within the answer timeout. This proves nothing: not stopped, not closed. */
export class TimeoutError extends SdkError {
  constructor(message, options) {
    super("TIMEOUT", message, options);
    this.name = "TimeoutError";
  }
}

/** Wrong state (a closed session, a closed agent). */
export class StateError extends SdkError {
  constructor(message, options) {
    super("STATE", message, options);
    this.name = "StateError";
  }
}

/**
 * The close budget ran out while the host still answered -32010: the host has NOT
 * settled. The session and the transport stay open; close may be called again.
 */
export class SessionCloseIncompleteError extends SdkError {
  /**
   * @param {string} lastMessage the message of the newest failure
   * @param {SdkError[]} causes the incomplete answer, then a different later failure
   */
  constructor(lastMessage, causes) {
    super("SESSION_CLOSE_INCOMPLETE", `Session close is incomplete: ${lastMessage}`, {
      cause: causes[causes.length - 1],
    });
    this.name = "SessionCloseIncompleteError";
    /** @type {SdkError[]} */
    this.causes = causes;
  }
}

/**
 * The C status name of any error ("UNKNOWN" for errors that are not the SDK's).
 * @param {unknown} e
 */
export function statusName(e) {
  return e instanceof SdkError ? e.status : "UNKNOWN";
}
