// oracle.js DRIVER — compares the room's text primitives with node's own
// JSON.stringify, TextDecoder (lenient and fatal), atob, and JSON.parse followed by
// the reference child runner's args/files checks, on seeded random and mutated inputs.
// Exit 0 when all agree; prints the first differences otherwise.
'use strict';
const { spawnSync } = require('child_process');
const driver = process.argv[2];
let seed = 0x2545f491;
const rnd = () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed / 4294967296; };
const pick = a => a[Math.floor(rnd() * a.length)];
const hx = s => Buffer.from(s, 'utf8').toString('hex');
let failures = 0;

function compare(mode, inputs, want) {
  const r = spawnSync(driver, [mode], { input: inputs.join('\n') + '\n', maxBuffer: 1 << 28 });
  const got = r.stdout.toString('utf8').split('\n');
  let bad = 0;
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) {
      if (bad++ < 3) console.error(`${mode}: input ${inputs[i]}\n  got  ${got[i]}\n  want ${want[i]}`);
    }
  }
  failures += bad;
  console.log(`${mode}: ${want.length - bad}/${want.length} agree`);
}

// JSON.stringify of strings.
{
  const pool = [...Array(0x80).keys()].map(c => String.fromCharCode(c)).concat(['é', '你', '😀', '\u2028', '\u2029', '\ufeff']);
  const ins = [], want = [];
  for (let i = 0; i < 3000; i++) {
    let s = ''; const n = Math.floor(rnd() * 20);
    for (let j = 0; j < n; j++) s += pick(pool);
    ins.push(hx(s)); want.push(JSON.stringify(s));
  }
  compare('j', ins, want);
}
// TextDecoder, lenient and fatal.
{
  const interesting = [0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbb, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff];
  const ins = [], lw = [], sw = [];
  for (let i = 0; i < 5000; i++) {
    const n = Math.floor(rnd() * 12), a = Buffer.alloc(n);
    for (let j = 0; j < n; j++) a[j] = rnd() < 0.7 ? pick(interesting) : Math.floor(rnd() * 256);
    if (i % 50 === 0 && n >= 3) { a[0] = 0xef; a[1] = 0xbb; a[2] = 0xbf; }
    ins.push(a.toString('hex'));
    lw.push(Buffer.from(new TextDecoder().decode(a), 'utf8').toString('hex'));
    let ok = 1; try { new TextDecoder('utf-8', { fatal: true }).decode(a); } catch { ok = 0; }
    sw.push(String(ok));
  }
  compare('u', ins, lw);
  compare('s', ins, sw);
}
// atob.
{
  const alpha = 'ABCXYZabcxyz019+/=  \t\n\r\f\v@-_';
  const ins = [], want = [];
  for (let i = 0; i < 5000; i++) {
    let s = ''; const n = Math.floor(rnd() * 14);
    for (let j = 0; j < n; j++) s += pick(alpha);
    ins.push(Buffer.from(s, 'latin1').toString('hex'));
    let r; try { const d = atob(s); r = d.length ? Buffer.from(d, 'latin1').toString('hex') : 'EMPTY'; } catch { r = 'ERR'; }
    want.push(r);
  }
  compare('b', ins, want);
}
// Input: request.text() + JSON.parse + `入?.args ?? []`, `入?.files ?? {}` and the checks.
{
  const seeds = ['{"args":["echo","\\u4f60"],"files":{"/a":"x","b/../c":"\\n","7":"s","0":"z"}}',
    '{"args":null,"files":{}}', '[]', '{"files":{"a":"1","a":"2"}}', '{"args":["\\ud800x"]}',
    '{"x":{"args":[1]},"args":[]}', '"s"', '{"\\u0061rgs":["k"]}', '{"files":{"a":1,"a":"2"}}',
    '{"files":{"1":"a","01":"b","4294967295":"c","4294967294":"d"}}'];
  const alpha = '{}[]",:\\/ \tabnu0123456789eE+-.trfl\u00e9\ufeff';
  const mut = s => {
    const a = [...s]; const m = 1 + Math.floor(rnd() * 3);
    for (let k = 0; k < m; k++) {
      const op = Math.floor(rnd() * 3), at = Math.floor(rnd() * (a.length + 1)), c = pick(alpha);
      if (op === 0 && a.length) a[Math.min(at, a.length - 1)] = c;
      else if (op === 1) a.splice(at, 0, c);
      else if (a.length) a.splice(Math.min(at, a.length - 1), 1);
    }
    return a.join('');
  };
  const ins = [], want = [];
  for (let i = 0; i < 20000; i++) {
    const src = seeds[i % seeds.length];
    let bytes = Buffer.from(i < seeds.length ? src : mut(src), 'utf8');
    if (i % 97 === 0) bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    if (i % 89 === 0) bytes = Buffer.concat([bytes, Buffer.from([0xff])]);
    ins.push(bytes.toString('hex'));
    let out;
    try {
      const 入 = JSON.parse(new TextDecoder().decode(bytes));
      const 参数 = 入?.args ?? [], 初始 = 入?.files ?? {};
      if (!Array.isArray(参数) || 参数.some(x => typeof x !== 'string')) out = 'E:args 须为字符串数组';
      else if (!(!!初始 && typeof 初始 === 'object' && !Array.isArray(初始) && Object.values(初始).every(x => typeof x === 'string'))) out = 'E:files 须为路径到文字的对象';
      else out = 'A:' + 参数.map(x => hx(x) + ',').join('') + '|F:' + Object.entries(初始).map(([k, v]) => hx(k) + '=' + hx(v) + ',').join('');
    } catch { out = 'E:输入不是有效 JSON'; }
    want.push(out);
  }
  compare('i', ins, want);
}
process.exit(failures ? 1 : 0);
