// bench/node-python.mjs — the room's CPython build (python.wasm of scripts/python-wasi.sh)
// under node:wasi, for scale against `peri python`:
//   node node-python.mjs PYTHON_DIR SCRIPT.py [RUNS]
// compiles python.wasm (no code cache), instantiates it with the standard library
// preopened at /usr/local/lib/python3.11 (as the room maps it) and a scratch "/",
// runs _initialize + peri_py_init, then the script with peri_py_alloc + peri_py_run.
// node has no snapshot: every run is a fresh instance that initialises again. The
// capability imports refuse every call (status 1), as the room does without a handler.
// Prints one line per run: compile_ms init_ms script_ms (wall, performance.now()).
import { readFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { argv } from 'node:process';

const [dir, script] = [argv[2], argv[3]];
const runs = Number(argv[4] || 1);
const src = await readFile(script);
const scratch = await mkdtemp(join(tmpdir(), 'node-python-'));
const t0 = performance.now();
const module = await WebAssembly.compile(await readFile(join(dir, 'python.wasm')));
const compileMs = performance.now() - t0;
for (let i = 0; i < runs; i++) {
  const wasi = new WASI({
    version: 'preview1', args: ['main.py'], returnOnExit: true,
    preopens: { '/usr/local/lib/python3.11': join(dir, 'lib/python3.11'), '/': scratch },
  });
  const cap = { dispatch: () => 1, reply: () => 0 };
  const t1 = performance.now();
  const inst = await WebAssembly.instantiate(module,
    { ...wasi.getImportObject(), peri_capability: cap });
  wasi.initialize(inst);
  if (inst.exports.peri_py_init() !== 0) throw new Error('peri_py_init failed');
  const t2 = performance.now();
  const p = inst.exports.peri_py_alloc(src.length);
  new Uint8Array(inst.exports.memory.buffer, p, src.length).set(src);
  try {
    inst.exports.peri_py_run(p, src.length);
  } catch (e) {
    // proc_exit ends the script (node's returnOnExit unwinds with an exception)
  }
  const t3 = performance.now();
  console.error(`${i === 0 ? compileMs.toFixed(1) : '0'} ${(t2 - t1).toFixed(1)} ${(t3 - t2).toFixed(1)}`);
}
