// bench/node-invoke.mjs — runs one export of an import-free module under node:
//   node node-invoke.mjs FILE.wasm NAME [I32 ARGS...]   → prints the i32 result
import { readFileSync } from 'node:fs';
const [file, name, ...args] = process.argv.slice(2);
const { instance } = await WebAssembly.instantiate(readFileSync(file), {});
console.log(instance.exports[name](...args.map(Number)));
