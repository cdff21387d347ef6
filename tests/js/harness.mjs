// harness.mjs — what the JS tests share: where the build's binaries are, the mock
// model (tests/host/mock_model.py) as a child process, and the skip rule (a missing
// prerequisite skips the test outside CI and fails it under CI=true).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BUILD = process.env.PERI_BUILD_DIR || path.join(REPO, "build");

/** The agent binary: $PERI_AGENT_BIN, else build/peri-agent, else build/peri. */
export function agentBinary() {
  for (const p of [process.env.PERI_AGENT_BIN, path.join(BUILD, "peri-agent"), path.join(BUILD, "peri")])
    if (p && fs.existsSync(p)) return p;
  return null;
}

/**
 * Skips the test (t.skip) when why is set, except under CI=true where it fails.
 * @returns {boolean} true when the caller should return
 */
export function missing(t, why) {
  if (!why) return false;
  if (process.env.CI === "true") throw new Error(`missing prerequisite: ${why}`);
  t.skip(why);
  return true;
}

/** Starts tests/host/mock_model.py; resolves { base, script(s), requests(), stop() }. */
export async function startMockModel() {
  const py = process.env.PYTHON3 || "python3";
  const child = spawn(py, [path.join(REPO, "tests/host/mock_model.py"), "--quiet", "--parent-pid", String(process.pid)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise((resolve, reject) => {
    let out = "";
    child.on("error", reject);
    child.on("exit", (c) => reject(new Error(`mock_model.py exited with ${c}`)));
    child.stdout.on("data", (d) => {
      out += d;
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    port,
    async script(s) {
      const r = await fetch(`${base}/_script`, { method: "POST", body: JSON.stringify(s) });
      if (!r.ok) throw new Error(`mock script: ${r.status}`);
    },
    async requests() {
      return (await fetch(`${base}/_requests`)).json();
    },
    stop() {
      child.kill("SIGTERM");
    },
  };
}

/** True when python3 runs. */
export function havePython() {
  return spawnSync(process.env.PYTHON3 || "python3", ["-c", "pass"]).status === 0;
}
