// run_tests.mjs — CTest's entry for the JS tests: runs `node --test` over tests/js/
// and turns "passed, but some tests were skipped" (a missing clang, python3 or agent
// binary outside CI) into exit 77, so that a skip never reports Passed.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const dir = path.dirname(fileURLToPath(import.meta.url));
const major = Number(process.versions.node.split(".")[0]);
if (major < 20) {
  const msg = `the JS package needs node >= 20, this is ${process.version}`;
  if (process.env.CI === "true") {
    console.log(`FAIL js.sdk: ${msg}`);
    process.exit(1);
  }
  console.log(`SKIP: ${msg}`);
  process.exit(77);
}
const child = spawn(process.execPath, ["--test", "--test-reporter=tap", dir], { stdio: ["ignore", "pipe", "inherit"] });
let out = "";
child.stdout.on("data", (d) => {
  out += d;
  process.stdout.write(d);
});
child.on("exit", (code, signal) => {
  const skipped = Number(/^# skipped (\d+)$/m.exec(out)?.[1] ?? 0);
  if (code === 0 && skipped > 0) {
    console.log(`SKIP: ${skipped} test(s) skipped for a missing prerequisite`);
    process.exit(77);
  }
  process.exit(code ?? (signal ? 1 : 0));
});
