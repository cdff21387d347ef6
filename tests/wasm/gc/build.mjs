// Assemble the GC test fixtures: node build.mjs (with the npm package binaryen@132
// resolvable, e.g. NODE_PATH=/tmp/x/node_modules). Writes <name>.wasm next to each
// <name>.wat. Uses the standard Wasm 3.0 feature set, not Features.All.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const binaryen = (await import(require.resolve('binaryen'))).default;
const dir = path.dirname(fileURLToPath(import.meta.url));
const F = binaryen.Features;
const features = F.MVP | F.MutableGlobals | F.SignExt | F.NontrappingFPToInt | F.BulkMemory |
    F.ReferenceTypes | F.Multivalue | F.GC | F.TailCall | F.ExceptionHandling |
    F.ExtendedConst;

for (const f of process.argv.length > 2 ? process.argv.slice(2)
                                         : fs.readdirSync(dir).filter((n) => n.endsWith('.wat'))) {
    const src = fs.readFileSync(path.resolve(dir, f));
    const mod = binaryen.parseText(src.toString('latin1')); // UTF-8 bytes as Latin-1
    mod.setFeatures(features);
    if (!mod.validate()) throw new Error(`${f}: invalid`);
    const out = path.resolve(dir, f.replace(/\.wat$/, '.wasm'));
    fs.writeFileSync(out, mod.emitBinary());
    console.log(`${out}: ${fs.statSync(out).size} bytes`);
}
