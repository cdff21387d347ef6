// index.mjs — the package's entry: the SDK (client, transports, errors) and the
// WebAssembly agent host.
export * from "./errors.mjs";
export { Sandbox, Agent, Session, Decision } from "./client.mjs";
export { streamTransport, stdioTransportFactory, MAX_FRAME } from "./transport.mjs";
export * from "./wasm-host.mjs";
