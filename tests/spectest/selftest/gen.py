#!/usr/bin/env python3
"""tests/spectest/selftest/gen.py — writes data/core/selftest/: a tiny testsuite script
(JSON + binary modules, MANIFEST.md format) whose assertions are chosen so that the
runner must report exactly 13 passed, 6 failed, 1 skipped. It proves that the runner
can fail: each command kind once the right way, and six deliberately wrong
expectations. Run it again after editing; the output is committed."""
import json, os

def leb(n):
    out = b''
    while True:
        b = n & 0x7f; n >>= 7
        if n: out += bytes([b | 0x80])
        else: return out + bytes([b])
def sleb(n):
    out = b''
    while True:
        b = n & 0x7f; n >>= 7
        if (n == 0 and not b & 0x40) or (n == -1 and b & 0x40): return out + bytes([b])
        out += bytes([b | 0x80])
def vec(items): return leb(len(items)) + b''.join(items)
def sec(i, body): return bytes([i]) + leb(len(body)) + body
def name(s): return leb(len(s)) + s.encode()
def ft(p, r): return b'\x60' + vec([bytes([x]) for x in p]) + vec([bytes([x]) for x in r])
def code(body, locals_=b'\x00'): b = locals_ + body + b'\x0b'; return leb(len(b)) + b
HDR = b'\x00asm\x01\x00\x00\x00'
I32, F32, EXT, FUNC = 0x7f, 0x7d, 0x6f, 0x70

ops = HDR + sec(1, vec([ft([I32, I32], [I32]), ft([], [F32]), ft([EXT], [EXT]),
                        ft([], [FUNC]), ft([], [])])) \
    + sec(3, vec([leb(x) for x in [0, 0, 1, 1, 2, 3, 4]])) \
    + sec(6, vec([b'\x7f\x00\x41' + sleb(42) + b'\x0b'])) \
    + sec(7, vec([name(n) + bytes([k]) + leb(i) for n, k, i in [
        ('add', 0, 0), ('div', 0, 1), ('f32nan', 0, 2), ('f32nan_arith', 0, 3),
        ('id_ext', 0, 4), ('null_func', 0, 5), ('loop', 0, 6), ('g', 3, 0)]])) \
    + sec(10, vec([
        code(b'\x20\x00\x20\x01\x6a'),                 # i32.add
        code(b'\x20\x00\x20\x01\x6d'),                 # i32.div_s
        code(b'\x43\x00\x00\xc0\x7f'),                 # f32.const 0x7fc00000
        code(b'\x43\x00\x00\xe0\x7f'),                 # f32.const 0x7fe00000
        code(b'\x20\x00'),                             # local.get 0
        code(b'\xd0\x70'),                             # ref.null func
        code(b'\x10\x06'),                             # call 6 (itself)
    ]))
reexport = HDR + sec(1, vec([ft([I32, I32], [I32])])) \
    + sec(2, vec([name('M') + name('add') + b'\x00\x00'])) \
    + sec(7, vec([name('add') + b'\x00\x00']))
unknown = HDR + sec(1, vec([ft([], [])])) + sec(2, vec([name('M') + name('nope') + b'\x00\x00']))
start_traps = HDR + sec(1, vec([ft([], [])])) + sec(3, vec([b'\x00'])) + sec(8, b'\x00') \
    + sec(10, vec([code(b'\x00')]))
invalid = HDR + sec(1, vec([ft([], [I32])])) + sec(3, vec([b'\x00'])) + sec(10, vec([code(b'')]))
malformed = HDR + b'\x01\x19\x05\x60'

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'core', 'selftest')
os.makedirs(out, exist_ok=True)
files = {}
for i, m in enumerate([ops, reexport, unknown, start_traps, invalid, ops, malformed]):
    files[i] = f'selftest.{i}.wasm'
    open(os.path.join(out, files[i]), 'wb').write(m)
open(os.path.join(out, 'selftest.7.wat'), 'w').write('(module (func (result i32) (i32.const)))')

def inv(field, *args, module=None):
    a = {'type': 'invoke', 'field': field, 'args': list(args)}
    if module: a['module'] = module
    return a
def v(t, x): return {'type': t, 'value': x}
cmds = [
    {'type': 'module', 'name': '$A', 'filename': files[0], 'module_type': 'binary'},
    {'type': 'assert_return', 'action': inv('add', v('i32', '1'), v('i32', '2')), 'expected': [v('i32', '3')]},
    {'type': 'assert_return', 'action': inv('add', v('i32', '1'), v('i32', '2')), 'expected': [v('i32', '4')]},  # FAIL
    {'type': 'assert_trap', 'action': inv('div', v('i32', '1'), v('i32', '0')), 'text': 'integer divide by zero'},
    {'type': 'assert_trap', 'action': inv('add', v('i32', '1'), v('i32', '2')), 'text': 'unreachable'},  # FAIL
    {'type': 'assert_return', 'action': inv('f32nan'), 'expected': [v('f32', 'nan:canonical')]},
    {'type': 'assert_return', 'action': inv('f32nan_arith'), 'expected': [v('f32', 'nan:arithmetic')]},
    {'type': 'assert_return', 'action': inv('f32nan_arith'), 'expected': [v('f32', 'nan:canonical')]},  # FAIL
    {'type': 'assert_return', 'action': inv('id_ext', v('externref', '7')), 'expected': [v('externref', '7')]},
    {'type': 'assert_return', 'action': inv('id_ext', v('externref', '7')), 'expected': [v('externref', '8')]},  # FAIL
    {'type': 'assert_return', 'action': inv('null_func'), 'expected': [v('funcref', 'null')]},
    {'type': 'action', 'action': {'type': 'get', 'field': 'g'}},
    {'type': 'assert_return', 'action': {'type': 'get', 'module': '$A', 'field': 'g'}, 'expected': [v('i32', '42')]},
    {'type': 'assert_exhaustion', 'action': inv('loop'), 'text': 'call stack exhausted'},
    {'type': 'register', 'name': '$A', 'as': 'M'},
    {'type': 'module', 'filename': files[1], 'module_type': 'binary'},
    {'type': 'assert_return', 'action': inv('add', v('i32', '2'), v('i32', '3')), 'expected': [v('i32', '5')]},
    {'type': 'assert_unlinkable', 'filename': files[2], 'module_type': 'binary', 'text': 'unknown import'},
    {'type': 'assert_uninstantiable', 'filename': files[3], 'module_type': 'binary', 'text': 'unreachable'},
    {'type': 'assert_invalid', 'filename': files[4], 'module_type': 'binary', 'text': 'type mismatch'},
    {'type': 'assert_invalid', 'filename': files[5], 'module_type': 'binary', 'text': 'type mismatch'},  # FAIL
    {'type': 'assert_malformed', 'filename': files[6], 'module_type': 'binary', 'text': 'unexpected end'},
    {'type': 'assert_malformed', 'filename': 'selftest.7.wat', 'module_type': 'text', 'text': 'unexpected token'},  # text module: the parser rejects it
    {'type': 'assert_return', 'action': inv('nope', module='$A'), 'expected': []},  # FAIL
]
for i, c in enumerate(cmds):
    c['line'] = i + 1
with open(os.path.join(out, 'selftest.json'), 'w') as f:
    f.write('{"source_filename": "selftest.wast",\n "commands": [\n')
    f.write(',\n'.join('  ' + json.dumps({k: c[k] for k in ['type', 'line'] + [k for k in c if k not in ('type', 'line')]})
                       for c in cmds))
    f.write('\n]}\n')
