// bench/node-wasi.mjs — runs a WASI preview 1 command under node:wasi, no preopens:
//   node node-wasi.mjs FILE.wasm [ARGS...]   → the program's output, its exit status
// The module is compiled on every run (no code cache), as ANCHORS.md's node runner.
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import { argv, exit } from 'node:process';

const file = argv[2];
const wasi = new WASI({ version: 'preview1', args: [file, ...argv.slice(3)], returnOnExit: true });
const module = await WebAssembly.compile(await readFile(file));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
exit(wasi.start(instance));
