// build.mjs — assembles the 豫言-ABI test programs (tests/room/yuyan/fixtures/*.wat)
// into committed .wasm files with binaryen (npm, v132), then reads every import and
// export name (and the 豫言边界 section) back with WebAssembly.Module to check that
// the non-ASCII names survived.
//
// Source convenience: `(str "text")` in a .wat is replaced by a call of the module's
// $s helper (array.new_data of $bytes from one passive segment `$strs` that this
// script appends); `;; @bound <line>` comment lines become the 豫言边界 custom section
// (one line each, \t written as a real tab).
//
// binaryen's parseText garbles non-ASCII text, so the UTF-8 bytes of the source are
// handed to it as a Latin-1 JavaScript string.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const js = process.env.BINARYEN_JS;
const binaryen = (await import(js ? pathToFileURL(js).href : 'binaryen')).default;
const dir = process.argv[2];
if (!dir) throw Error('usage: node build.mjs FIXTURE_DIR [NAME...]');
const only = process.argv.slice(3);

function wasmString(bytes) {
  let s = '"';
  for (const b of bytes) s += '\\' + b.toString(16).padStart(2, '0');
  return s + '"';
}

function expand(src) {
  const pool = [], index = new Map();
  let total = 0;
  const text = src.replace(/\(str "((?:[^"\\]|\\.)*)"\)/g, (_, lit) => {
    const bytes = Buffer.from(JSON.parse('"' + lit + '"'), 'utf8');
    const key = bytes.toString('hex');
    if (!index.has(key)) { index.set(key, total); pool.push(bytes); total += bytes.length; }
    return `(call $s (i32.const ${index.get(key)}) (i32.const ${bytes.length}))`;
  });
  const data = `  (data $strs ${wasmString(Buffer.concat(pool.length ? pool : [Buffer.alloc(1)]))})\n`;
  const end = text.lastIndexOf(')');
  const bound = [...src.matchAll(/^\s*;; @bound (.*)$/gm)].map(m => m[1].replace(/\\t/g, '\t'));
  return { text: text.slice(0, end) + data + text.slice(end), bound };
}

const features = binaryen.Features.GC | binaryen.Features.ReferenceTypes |
  binaryen.Features.ExceptionHandling | binaryen.Features.TailCall | binaryen.Features.Multivalue |
  binaryen.Features.BulkMemory | binaryen.Features.SignExt |
  binaryen.Features.NontrappingFPToInt | binaryen.Features.MutableGlobals;

for (const name of fs.readdirSync(dir).filter(f => f.endsWith('.wat')).sort()) {
  if (only.length && !only.includes(name)) continue;
  const { text, bound } = expand(fs.readFileSync(path.join(dir, name), 'utf8'));
  const mod = binaryen.parseText(Buffer.from(text, 'utf8').toString('latin1'));
  mod.setFeatures(features);
  if (bound.length) mod.addCustomSection('豫言边界', Buffer.from(bound.join('\n') + '\n', 'utf8'));
  if (!mod.validate()) throw Error(name + ': binaryen validation failed');
  const bin = mod.emitBinary();
  mod.dispose();
  const m = new WebAssembly.Module(bin);
  const names = [...WebAssembly.Module.imports(m).map(i => i.module + '.' + i.name),
                 ...WebAssembly.Module.exports(m).map(e => e.name)];
  for (const n of names) if (/[\u0080-\u00ff]/.test(n)) throw Error(`${name}: garbled name ${n}`);
  const secs = WebAssembly.Module.customSections(m, '豫言边界');
  if (bound.length && secs.length !== 1) throw Error(`${name}: 豫言边界 section missing`);
  const out = path.join(dir, name.replace(/\.wat$/, '.wasm'));
  fs.writeFileSync(out, bin);
  console.log(`${out}: ${bin.length} bytes; ${names.join(' ')}`);
}
