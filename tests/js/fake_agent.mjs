// fake_agent.mjs — a scripted in-memory agent for the SDK tests: a transport whose
// peer is a function. Every frame the SDK sends is recorded (with the time it was
// sent) and handed to the script, which answers with reply()/push().
export function fakeAgent(script) {
  const frames = [];
  const waiters = [];
  const sent = [];
  let closed = false;
  const push = (msg) => {
    const text = typeof msg === "string" ? msg : JSON.stringify(msg);
    if (waiters.length) waiters.shift()(text);
    else frames.push(text);
  };
  const end = () => {
    closed = true;
    while (waiters.length) waiters.shift()(null);
  };
  const transport = {
    send(frame) {
      if (closed) throw new Error("closed");
      const msg = JSON.parse(frame);
      sent.push({ at: performance.now(), msg });
      const reply = (result) => push({ jsonrpc: "2.0", id: msg.id, result });
      const fail = (code, message, data) =>
        push({ jsonrpc: "2.0", id: msg.id, error: { code, message, ...(data ? { data } : {}) } });
      // answered later, as a real agent would
      setImmediate(() => script(msg, { reply, fail, push, end }));
    },
    recv() {
      if (frames.length) return Promise.resolve(frames.shift());
      if (closed) return Promise.resolve(null);
      return new Promise((r) => waiters.push(r));
    },
    close() {
      end();
    },
  };
  return { transport, sent, push, end };
}

/** The usual answers: initialize, session/new (id "s1"), and the given close policy. */
export function standardScript(onClose, extra = () => false) {
  return (msg, io) => {
    if (extra(msg, io)) return;
    switch (msg.method) {
      case "initialize":
        return io.reply({ protocolVersion: 1, agentInfo: { name: "fake", version: "1.0" } });
      case "session/new":
        return io.reply({ sessionId: "s1" });
      case "session/close":
        return onClose(msg, io);
      default:
        if (msg.id !== undefined) io.fail(-32601, "Method not found");
    }
  };
}
