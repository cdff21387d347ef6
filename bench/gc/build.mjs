// bench/gc/build.mjs — assemble bench/gc/*.wat into *.wasm with the npm package
// binaryen@132 (install it under /tmp, e.g. `npm install --prefix /tmp/bt binaryen@132`,
// and run with NODE_PATH=/tmp/bt/node_modules). Standard Wasm 3.0 features, no
// optimisation passes: the engines get the kernel as written.
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
for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.wat'))) {
    const mod = binaryen.parseText(fs.readFileSync(path.resolve(dir, f)).toString('latin1'));
    mod.setFeatures(features);
    if (!mod.validate()) throw new Error(`${f}: invalid`);
    const out = path.resolve(dir, f.replace(/\.wat$/, '.wasm'));
    fs.writeFileSync(out, mod.emitBinary());
    console.log(`${out}: ${fs.statSync(out).size} bytes`);
}
