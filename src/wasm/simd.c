/*
 * simd.c — the SIMD opcode table (simd.h) and the interpreter's executor for every
 * 0xFD instruction, in portable C: lane loops over a 16-byte union that compilers
 * vectorise where they can. Float lanes follow the scalar rules (fops.h): min/max
 * with NaN and signed zero, rounding that quiets signalling NaNs, saturating
 * truncation. NaN results are whatever IEEE arithmetic gives, which the spec allows
 * (canonical or arithmetic NaN as it requires).
 *
 * Invariant: the compiler emits SIMD only for validated code, so operand slots are
 * in the frame and memory/global indices exist; lane immediates are masked anyway.
 */
#include "wasm/simd.h"

#include "wasm/fops.h"

#include <string.h>

static const pw_simd_info INFO[PW_FD_COUNT] = {
    [0x00] = {1, PW_SI_MEM, {0}, 'v', 0, 4},
    [0x01] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x02] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x03] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x04] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x05] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x06] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x07] = {1, PW_SI_MEM, {0}, 'v', 0, 0},
    [0x08] = {1, PW_SI_MEM, {0}, 'v', 0, 1},
    [0x09] = {1, PW_SI_MEM, {0}, 'v', 0, 2},
    [0x0A] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x0B] = {1, PW_SI_MEM, {'v'}, 0, 0, 4},
    [0x0C] = {1, PW_SI_V128, {0}, 'v', 0, 0},
    [0x0D] = {1, PW_SI_SHUF, {'v', 'v'}, 'v', 0, 0},
    [0x0E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x0F] = {1, PW_SI_NONE, {'i'}, 'v', 0, 0},
    [0x10] = {1, PW_SI_NONE, {'i'}, 'v', 0, 0},
    [0x11] = {1, PW_SI_NONE, {'i'}, 'v', 0, 0},
    [0x12] = {1, PW_SI_NONE, {'l'}, 'v', 0, 0},
    [0x13] = {1, PW_SI_NONE, {'f'}, 'v', 0, 0},
    [0x14] = {1, PW_SI_NONE, {'d'}, 'v', 0, 0},
    [0x15] = {1, PW_SI_LANE, {'v'}, 'i', 16, 0},
    [0x16] = {1, PW_SI_LANE, {'v'}, 'i', 16, 0},
    [0x17] = {1, PW_SI_LANE, {'v', 'i'}, 'v', 16, 0},
    [0x18] = {1, PW_SI_LANE, {'v'}, 'i', 8, 0},
    [0x19] = {1, PW_SI_LANE, {'v'}, 'i', 8, 0},
    [0x1A] = {1, PW_SI_LANE, {'v', 'i'}, 'v', 8, 0},
    [0x1B] = {1, PW_SI_LANE, {'v'}, 'i', 4, 0},
    [0x1C] = {1, PW_SI_LANE, {'v', 'i'}, 'v', 4, 0},
    [0x1D] = {1, PW_SI_LANE, {'v'}, 'l', 2, 0},
    [0x1E] = {1, PW_SI_LANE, {'v', 'l'}, 'v', 2, 0},
    [0x1F] = {1, PW_SI_LANE, {'v'}, 'f', 4, 0},
    [0x20] = {1, PW_SI_LANE, {'v', 'f'}, 'v', 4, 0},
    [0x21] = {1, PW_SI_LANE, {'v'}, 'd', 2, 0},
    [0x22] = {1, PW_SI_LANE, {'v', 'd'}, 'v', 2, 0},
    [0x23] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x24] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x25] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x26] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x27] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x28] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x29] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x2A] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x2B] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x2C] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x2D] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x2E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x2F] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x30] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x31] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x32] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x33] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x34] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x35] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x36] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x37] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x38] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x39] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x3A] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x3B] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x3C] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x3D] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x3E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x3F] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x40] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x41] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x42] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x43] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x44] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x45] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x46] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x47] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x48] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x49] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x4A] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x4B] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x4C] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x4D] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x4E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x4F] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x50] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x51] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x52] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x53] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0x54] = {1, PW_SI_MEMLANE, {'v'}, 'v', 16, 0},
    [0x55] = {1, PW_SI_MEMLANE, {'v'}, 'v', 8, 1},
    [0x56] = {1, PW_SI_MEMLANE, {'v'}, 'v', 4, 2},
    [0x57] = {1, PW_SI_MEMLANE, {'v'}, 'v', 2, 3},
    [0x58] = {1, PW_SI_MEMLANE, {'v'}, 0, 16, 0},
    [0x59] = {1, PW_SI_MEMLANE, {'v'}, 0, 8, 1},
    [0x5A] = {1, PW_SI_MEMLANE, {'v'}, 0, 4, 2},
    [0x5B] = {1, PW_SI_MEMLANE, {'v'}, 0, 2, 3},
    [0x5C] = {1, PW_SI_MEM, {0}, 'v', 0, 2},
    [0x5D] = {1, PW_SI_MEM, {0}, 'v', 0, 3},
    [0x5E] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x5F] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x60] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x61] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x62] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x63] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0x64] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0x65] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x66] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x67] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x68] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x69] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x6A] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x6B] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0x6C] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0x6D] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0x6E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x6F] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x70] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x71] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x72] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x73] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x74] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x75] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x76] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x77] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x78] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x79] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x7A] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x7B] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x7C] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x7D] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x7E] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x7F] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x80] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x81] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x82] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x83] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0x84] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0x85] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x86] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x87] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x88] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x89] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x8A] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x8B] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0x8C] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0x8D] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0x8E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x8F] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x90] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x91] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x92] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x93] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x94] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x95] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x96] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x97] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x98] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x99] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x9B] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x9C] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x9D] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x9E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x9F] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xA0] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xA1] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xA3] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0xA4] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0xA7] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xA8] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xA9] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xAA] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xAB] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0xAC] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0xAD] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0xAE] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xB1] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xB5] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xB6] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xB7] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xB8] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xB9] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xBA] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xBC] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xBD] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xBE] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xBF] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xC0] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xC1] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xC3] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0xC4] = {1, PW_SI_NONE, {'v'}, 'i', 0, 0},
    [0xC7] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xC8] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xC9] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xCA] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xCB] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0xCC] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0xCD] = {1, PW_SI_NONE, {'v', 'i'}, 'v', 0, 0},
    [0xCE] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xD1] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xD5] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xD6] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xD7] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xD8] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xD9] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xDA] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xDB] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xDC] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xDD] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xDE] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xDF] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xE0] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xE1] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xE3] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xE4] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xE5] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xE6] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xE7] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xE8] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xE9] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xEA] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xEB] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xEC] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xED] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xEF] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xF0] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF1] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF2] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF3] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF4] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF5] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF6] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF7] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0xF8] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xF9] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xFA] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xFB] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xFC] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xFD] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xFE] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0xFF] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x100] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x101] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x102] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x103] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x104] = {1, PW_SI_NONE, {'v'}, 'v', 0, 0},
    [0x105] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x106] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x107] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x108] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x109] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x10A] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x10B] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x10C] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},
    [0x10D] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x10E] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x10F] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x110] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x111] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x112] = {1, PW_SI_NONE, {'v', 'v'}, 'v', 0, 0},
    [0x113] = {1, PW_SI_NONE, {'v', 'v', 'v'}, 'v', 0, 0},

};

const pw_simd_info *pw__simd_op(uint32_t sub) {
    if (sub >= PW_FD_COUNT || !INFO[sub].valid) return NULL;
    return &INFO[sub];
}

typedef union v128 {
    uint8_t u8[16];
    int8_t i8[16];
    uint16_t u16[8];
    int16_t i16[8];
    uint32_t u32[4];
    int32_t i32[4];
    uint64_t u64[2];
    int64_t i64[2];
    float f32[4];
    double f64[2];
} v128;

static inline v128 ld(const pw_slot *p) {
    v128 v;
    memcpy(&v, p, 16);
    return v;
}

static inline int32_t sat8s(int32_t x) {
    return x < -128 ? -128 : x > 127 ? 127 : x;
}
static inline int32_t sat8u(int32_t x) {
    return x < 0 ? 0 : x > 255 ? 255 : x;
}
static inline int32_t sat16s(int32_t x) {
    return x < -32768 ? -32768 : x > 32767 ? 32767 : x;
}
static inline int32_t sat16u(int32_t x) {
    return x < 0 ? 0 : x > 65535 ? 65535 : x;
}

static inline float fmin32(float a, float b, bool max) {
    pw_slot x = {.u64 = 0}, y = {.u64 = 0}, r;
    x.f32 = a;
    y.f32 = b;
    r.u32 = f32_minmax(x, y, max);
    return r.f32;
}
static inline double fmin64(double a, double b, bool max) {
    pw_slot x, y, r;
    x.f64 = a;
    y.f64 = b;
    r.u64 = f64_minmax(x, y, max);
    return r.f64;
}

/* Memory: the effective address of an access of w bytes, or false (out of bounds). */
static bool ea_of(const pw_memory *m, const pw_slot *a, uint64_t off, uint64_t w, uint64_t *ea) {
    uint64_t addr = m->is64 ? a->u64 : a->u32, e = addr + off;
    if (e < addr || e > m->size || w > m->size - e) return false;
    *ea = e;
    return true;
}

#define L8(e)                                                                                      \
    for (int i = 0; i < 16; i++)                                                                   \
        r.e;                                                                                       \
    break
#define L16(e)                                                                                     \
    for (int i = 0; i < 8; i++)                                                                    \
        r.e;                                                                                       \
    break
#define L32(e)                                                                                     \
    for (int i = 0; i < 4; i++)                                                                    \
        r.e;                                                                                       \
    break
#define L64(e)                                                                                     \
    for (int i = 0; i < 2; i++)                                                                    \
        r.e;                                                                                       \
    break
#define M(c) ((c) ? -1 : 0)

static pw_trap_code mem_op(pw_instance *inst, pw_slot *fp, const uint32_t *pc, uint32_t sub) {
    pw_memory *m = inst->mems[pc[6]];
    uint64_t off = (uint64_t)pc[7] | (uint64_t)pc[8] << 32, ea;
    uint32_t lane = pc[9];
    const pw_simd_info *in = &INFO[sub];
    uint64_t w = (uint64_t)1 << in->align;
    if (sub == 0x01 || sub == 0x02 || sub == 0x03 || sub == 0x04 || sub == 0x05 || sub == 0x06)
        w = 8;
    if (!ea_of(m, &fp[pc[3]], off, w, &ea)) return PW_TRAP_MEM_OOB;
    uint8_t *p = m->data + ea;
    v128 r;
    memset(&r, 0, sizeof r);
    switch (sub) {
    case 0x00: memcpy(&r, p, 16); break;
    case 0x01: {
        int8_t t[8];
        memcpy(t, p, 8);
        for (int i = 0; i < 8; i++)
            r.i16[i] = t[i];
        break;
    }
    case 0x02: {
        uint8_t t[8];
        memcpy(t, p, 8);
        for (int i = 0; i < 8; i++)
            r.u16[i] = t[i];
        break;
    }
    case 0x03: {
        int16_t t[4];
        memcpy(t, p, 8);
        for (int i = 0; i < 4; i++)
            r.i32[i] = t[i];
        break;
    }
    case 0x04: {
        uint16_t t[4];
        memcpy(t, p, 8);
        for (int i = 0; i < 4; i++)
            r.u32[i] = t[i];
        break;
    }
    case 0x05: {
        int32_t t[2];
        memcpy(t, p, 8);
        for (int i = 0; i < 2; i++)
            r.i64[i] = t[i];
        break;
    }
    case 0x06: {
        uint32_t t[2];
        memcpy(t, p, 8);
        for (int i = 0; i < 2; i++)
            r.u64[i] = t[i];
        break;
    }
    case 0x07:
    case 0x08:
    case 0x09:
    case 0x0A:
        for (int i = 0; i < 16; i += (int)w)
            memcpy(r.u8 + i, p, w);
        break;
    case 0x0B: memcpy(p, &fp[pc[4]], 16); return PW_TRAP_NONE;
    case 0x54:
    case 0x55:
    case 0x56:
    case 0x57:
        r = ld(&fp[pc[4]]);
        memcpy(r.u8 + (lane & (16 / w - 1)) * w, p, w);
        break;
    case 0x58:
    case 0x59:
    case 0x5A:
    case 0x5B: {
        v128 v = ld(&fp[pc[4]]);
        memcpy(p, v.u8 + (lane & (16 / w - 1)) * w, w);
        return PW_TRAP_NONE;
    }
    case 0x5C:
    case 0x5D: memcpy(r.u8, p, w); break;
    default: return PW_TRAP_UNREACHABLE;
    }
    memcpy(&fp[pc[2]], &r, 16);
    return PW_TRAP_NONE;
}

/* The interpreter's dispatch of the SIMD instructions: one switch over every lane-wise
 * kind, like the dispatch loop itself, and long for the same reason. Split into a
 * switch per family (shapes and lanes, then arithmetic), lanehash under --engine interp
 * took 1.35 s of CPU instead of 0.92 s: the second switch, the operand copies and the
 * lost jump table cost more than the whole lane operation. */
pw_trap_code pw__simd_exec(pw_instance *inst, pw_slot *fp, const uint32_t *pc) {
    uint32_t sub = pc[1];
    pw_slot *dst = &fp[pc[2]];
    if (sub == PW_SIMD_GLOBAL_GET) {
        pw_global *g = inst->globals[pc[6]];
        dst[0] = g->val;
        dst[1].u64 = g->hi;
        return PW_TRAP_NONE;
    }
    if (sub == PW_SIMD_GLOBAL_SET) {
        pw_global *g = inst->globals[pc[6]];
        g->val = fp[pc[3]];
        g->hi = fp[pc[3] + 1].u64;
        return PW_TRAP_NONE;
    }
    if (sub >= PW_FD_COUNT) return PW_TRAP_UNREACHABLE;
    uint8_t imm = INFO[sub].imm;
    if (imm == PW_SI_MEM || imm == PW_SI_MEMLANE) return mem_op(inst, fp, pc, sub);
    const pw_slot *sa = &fp[pc[3]], *sb = &fp[pc[4]];
    v128 a = {{0}}, b = {{0}}, c = {{0}}, r;
    /* Operands are read before the result is written (dst may alias them). */
    if (INFO[sub].in[0] == 'v') a = ld(sa);
    if (INFO[sub].in[1] == 'v') b = ld(sb);
    if (INFO[sub].in[2] == 'v') c = ld(&fp[pc[5]]);
    memset(&r, 0, sizeof r);
    uint32_t lane = pc[9];
    uint32_t sh = sb->u32;
    switch (sub) {
    /* ---- shuffles, splats, lanes */
    case 0x0D:
        for (int i = 0; i < 16; i++) {
            uint32_t k = ((const uint8_t *)&pc[6])[i] & 31;
            r.u8[i] = k < 16 ? a.u8[k] : b.u8[k - 16];
        }
        break;
    case 0x0E:
    case 0x100: L8(u8[i] = b.u8[i] < 16 ? a.u8[b.u8[i]] : 0);
    case 0x0F: L8(u8[i] = (uint8_t)sa->u32);
    case 0x10: L16(u16[i] = (uint16_t)sa->u32);
    case 0x11: L32(u32[i] = sa->u32);
    case 0x12: L64(u64[i] = sa->u64);
    case 0x13: L32(u32[i] = sa->u32);
    case 0x14: L64(u64[i] = sa->u64);
    case 0x15: dst->u32 = (uint32_t)(int32_t)a.i8[lane & 15]; return PW_TRAP_NONE;
    case 0x16: dst->u32 = a.u8[lane & 15]; return PW_TRAP_NONE;
    case 0x18: dst->u32 = (uint32_t)(int32_t)a.i16[lane & 7]; return PW_TRAP_NONE;
    case 0x19: dst->u32 = a.u16[lane & 7]; return PW_TRAP_NONE;
    case 0x1B:
    case 0x1F: dst->u32 = a.u32[lane & 3]; return PW_TRAP_NONE;
    case 0x1D:
    case 0x21: dst->u64 = a.u64[lane & 1]; return PW_TRAP_NONE;
    case 0x17: r = a, r.u8[lane & 15] = (uint8_t)sb->u32; break;
    case 0x1A: r = a, r.u16[lane & 7] = (uint16_t)sb->u32; break;
    case 0x1C:
    case 0x20: r = a, r.u32[lane & 3] = sb->u32; break;
    case 0x1E:
    case 0x22: r = a, r.u64[lane & 1] = sb->u64; break;
    /* ---- comparisons */
    case 0x23: L8(i8[i] = M(a.u8[i] == b.u8[i]));
    case 0x24: L8(i8[i] = M(a.u8[i] != b.u8[i]));
    case 0x25: L8(i8[i] = M(a.i8[i] < b.i8[i]));
    case 0x26: L8(i8[i] = M(a.u8[i] < b.u8[i]));
    case 0x27: L8(i8[i] = M(a.i8[i] > b.i8[i]));
    case 0x28: L8(i8[i] = M(a.u8[i] > b.u8[i]));
    case 0x29: L8(i8[i] = M(a.i8[i] <= b.i8[i]));
    case 0x2A: L8(i8[i] = M(a.u8[i] <= b.u8[i]));
    case 0x2B: L8(i8[i] = M(a.i8[i] >= b.i8[i]));
    case 0x2C: L8(i8[i] = M(a.u8[i] >= b.u8[i]));
    case 0x2D: L16(i16[i] = M(a.u16[i] == b.u16[i]));
    case 0x2E: L16(i16[i] = M(a.u16[i] != b.u16[i]));
    case 0x2F: L16(i16[i] = M(a.i16[i] < b.i16[i]));
    case 0x30: L16(i16[i] = M(a.u16[i] < b.u16[i]));
    case 0x31: L16(i16[i] = M(a.i16[i] > b.i16[i]));
    case 0x32: L16(i16[i] = M(a.u16[i] > b.u16[i]));
    case 0x33: L16(i16[i] = M(a.i16[i] <= b.i16[i]));
    case 0x34: L16(i16[i] = M(a.u16[i] <= b.u16[i]));
    case 0x35: L16(i16[i] = M(a.i16[i] >= b.i16[i]));
    case 0x36: L16(i16[i] = M(a.u16[i] >= b.u16[i]));
    case 0x37: L32(i32[i] = M(a.u32[i] == b.u32[i]));
    case 0x38: L32(i32[i] = M(a.u32[i] != b.u32[i]));
    case 0x39: L32(i32[i] = M(a.i32[i] < b.i32[i]));
    case 0x3A: L32(i32[i] = M(a.u32[i] < b.u32[i]));
    case 0x3B: L32(i32[i] = M(a.i32[i] > b.i32[i]));
    case 0x3C: L32(i32[i] = M(a.u32[i] > b.u32[i]));
    case 0x3D: L32(i32[i] = M(a.i32[i] <= b.i32[i]));
    case 0x3E: L32(i32[i] = M(a.u32[i] <= b.u32[i]));
    case 0x3F: L32(i32[i] = M(a.i32[i] >= b.i32[i]));
    case 0x40: L32(i32[i] = M(a.u32[i] >= b.u32[i]));
    case 0x41: L32(i32[i] = M(a.f32[i] == b.f32[i]));
    case 0x42: L32(i32[i] = M(a.f32[i] != b.f32[i]));
    case 0x43: L32(i32[i] = M(a.f32[i] < b.f32[i]));
    case 0x44: L32(i32[i] = M(a.f32[i] > b.f32[i]));
    case 0x45: L32(i32[i] = M(a.f32[i] <= b.f32[i]));
    case 0x46: L32(i32[i] = M(a.f32[i] >= b.f32[i]));
    case 0x47: L64(i64[i] = M(a.f64[i] == b.f64[i]));
    case 0x48: L64(i64[i] = M(a.f64[i] != b.f64[i]));
    case 0x49: L64(i64[i] = M(a.f64[i] < b.f64[i]));
    case 0x4A: L64(i64[i] = M(a.f64[i] > b.f64[i]));
    case 0x4B: L64(i64[i] = M(a.f64[i] <= b.f64[i]));
    case 0x4C: L64(i64[i] = M(a.f64[i] >= b.f64[i]));
    case 0xD6: L64(i64[i] = M(a.u64[i] == b.u64[i]));
    case 0xD7: L64(i64[i] = M(a.u64[i] != b.u64[i]));
    case 0xD8: L64(i64[i] = M(a.i64[i] < b.i64[i]));
    case 0xD9: L64(i64[i] = M(a.i64[i] > b.i64[i]));
    case 0xDA: L64(i64[i] = M(a.i64[i] <= b.i64[i]));
    case 0xDB: L64(i64[i] = M(a.i64[i] >= b.i64[i]));
    /* ---- bitwise */
    case 0x4D: L64(u64[i] = ~a.u64[i]);
    case 0x4E: L64(u64[i] = a.u64[i] & b.u64[i]);
    case 0x4F: L64(u64[i] = a.u64[i] & ~b.u64[i]);
    case 0x50: L64(u64[i] = a.u64[i] | b.u64[i]);
    case 0x51: L64(u64[i] = a.u64[i] ^ b.u64[i]);
    case 0x52:
    case 0x109:
    case 0x10A:
    case 0x10B:
    case 0x10C: L64(u64[i] = (a.u64[i] & c.u64[i]) | (b.u64[i] & ~c.u64[i]));
    case 0x53: dst->u32 = (a.u64[0] | a.u64[1]) != 0; return PW_TRAP_NONE;
    /* ---- conversions between shapes */
    case 0x5E:
        r.f32[0] = (float)a.f64[0];
        r.f32[1] = (float)a.f64[1];
        break;
    case 0x5F:
        r.f64[0] = (double)a.f32[0];
        r.f64[1] = (double)a.f32[1];
        break;
    case 0x65: L8(i8[i] = (int8_t)sat8s(i < 8 ? a.i16[i] : b.i16[i - 8]));
    case 0x66: L8(u8[i] = (uint8_t)sat8u(i < 8 ? a.i16[i] : b.i16[i - 8]));
    case 0x85:
        for (int i = 0; i < 8; i++) {
            int32_t x = i < 4 ? a.i32[i] : b.i32[i - 4];
            r.i16[i] = (int16_t)(x < -32768 ? -32768 : x > 32767 ? 32767 : x);
        }
        break;
    case 0x86:
        for (int i = 0; i < 8; i++) {
            int32_t x = i < 4 ? a.i32[i] : b.i32[i - 4];
            r.u16[i] = (uint16_t)(x < 0 ? 0 : x > 65535 ? 65535 : x);
        }
        break;
    case 0x87: L16(i16[i] = a.i8[i]);
    case 0x88: L16(i16[i] = a.i8[i + 8]);
    case 0x89: L16(u16[i] = a.u8[i]);
    case 0x8A: L16(u16[i] = a.u8[i + 8]);
    case 0xA7: L32(i32[i] = a.i16[i]);
    case 0xA8: L32(i32[i] = a.i16[i + 4]);
    case 0xA9: L32(u32[i] = a.u16[i]);
    case 0xAA: L32(u32[i] = a.u16[i + 4]);
    case 0xC7: L64(i64[i] = a.i32[i]);
    case 0xC8: L64(i64[i] = a.i32[i + 2]);
    case 0xC9: L64(u64[i] = a.u32[i]);
    case 0xCA: L64(u64[i] = a.u32[i + 2]);
    case 0xF8:
    case 0x101: L32(i32[i] = pw_sat_i32(a.f32[i]));
    case 0xF9:
    case 0x102: L32(u32[i] = pw_sat_u32(a.f32[i]));
    case 0xFA: L32(f32[i] = (float)a.i32[i]);
    case 0xFB: L32(f32[i] = (float)a.u32[i]);
    case 0xFC:
    case 0x103:
        r.i32[0] = pw_sat_i32(a.f64[0]);
        r.i32[1] = pw_sat_i32(a.f64[1]);
        break;
    case 0xFD:
    case 0x104:
        r.u32[0] = pw_sat_u32(a.f64[0]);
        r.u32[1] = pw_sat_u32(a.f64[1]);
        break;
    case 0xFE: L64(f64[i] = (double)a.i32[i]);
    case 0xFF: L64(f64[i] = (double)a.u32[i]);
    /* ---- i8x16 */
    case 0x60: L8(u8[i] = (uint8_t)(a.i8[i] < 0 ? -a.i8[i] : a.i8[i]));
    case 0x61: L8(u8[i] = (uint8_t)(0u - a.u8[i]));
    case 0x62: L8(u8[i] = (uint8_t)__builtin_popcount(a.u8[i]));
    case 0x63: {
        uint32_t t = 1;
        for (int i = 0; i < 16; i++)
            t &= a.u8[i] != 0;
        dst->u32 = t;
        return PW_TRAP_NONE;
    }
    case 0x64: {
        uint32_t t = 0;
        for (int i = 0; i < 16; i++)
            t |= (uint32_t)(a.u8[i] >> 7) << i;
        dst->u32 = t;
        return PW_TRAP_NONE;
    }
    case 0x6B: L8(u8[i] = (uint8_t)(a.u8[i] << (sh & 7)));
    case 0x6C: L8(i8[i] = (int8_t)(a.i8[i] >> (sh & 7)));
    case 0x6D: L8(u8[i] = (uint8_t)(a.u8[i] >> (sh & 7)));
    case 0x6E: L8(u8[i] = (uint8_t)(a.u8[i] + b.u8[i]));
    case 0x6F: L8(i8[i] = (int8_t)sat8s(a.i8[i] + b.i8[i]));
    case 0x70: L8(u8[i] = (uint8_t)sat8u(a.u8[i] + b.u8[i]));
    case 0x71: L8(u8[i] = (uint8_t)(a.u8[i] - b.u8[i]));
    case 0x72: L8(i8[i] = (int8_t)sat8s(a.i8[i] - b.i8[i]));
    case 0x73: L8(u8[i] = (uint8_t)sat8u(a.u8[i] - b.u8[i]));
    case 0x76: L8(i8[i] = a.i8[i] < b.i8[i] ? a.i8[i] : b.i8[i]);
    case 0x77: L8(u8[i] = a.u8[i] < b.u8[i] ? a.u8[i] : b.u8[i]);
    case 0x78: L8(i8[i] = a.i8[i] > b.i8[i] ? a.i8[i] : b.i8[i]);
    case 0x79: L8(u8[i] = a.u8[i] > b.u8[i] ? a.u8[i] : b.u8[i]);
    case 0x7B: L8(u8[i] = (uint8_t)((a.u8[i] + b.u8[i] + 1) >> 1));
    /* ---- i16x8 */
    case 0x7C: L16(i16[i] = (int16_t)(a.i8[2 * i] + a.i8[2 * i + 1]));
    case 0x7D: L16(u16[i] = (uint16_t)(a.u8[2 * i] + a.u8[2 * i + 1]));
    case 0x80: L16(u16[i] = (uint16_t)(a.i16[i] < 0 ? -a.i16[i] : a.i16[i]));
    case 0x81: L16(u16[i] = (uint16_t)(0u - a.u16[i]));
    case 0x82:
    case 0x111: L16(i16[i] = (int16_t)sat16s((a.i16[i] * b.i16[i] + 0x4000) >> 15));
    case 0x83: {
        uint32_t t = 1;
        for (int i = 0; i < 8; i++)
            t &= a.u16[i] != 0;
        dst->u32 = t;
        return PW_TRAP_NONE;
    }
    case 0x84: {
        uint32_t t = 0;
        for (int i = 0; i < 8; i++)
            t |= (uint32_t)(a.u16[i] >> 15) << i;
        dst->u32 = t;
        return PW_TRAP_NONE;
    }
    case 0x8B: L16(u16[i] = (uint16_t)(a.u16[i] << (sh & 15)));
    case 0x8C: L16(i16[i] = (int16_t)(a.i16[i] >> (sh & 15)));
    case 0x8D: L16(u16[i] = (uint16_t)(a.u16[i] >> (sh & 15)));
    case 0x8E: L16(u16[i] = (uint16_t)(a.u16[i] + b.u16[i]));
    case 0x8F: L16(i16[i] = (int16_t)sat16s(a.i16[i] + b.i16[i]));
    case 0x90: L16(u16[i] = (uint16_t)sat16u(a.u16[i] + b.u16[i]));
    case 0x91: L16(u16[i] = (uint16_t)(a.u16[i] - b.u16[i]));
    case 0x92: L16(i16[i] = (int16_t)sat16s(a.i16[i] - b.i16[i]));
    case 0x93: L16(u16[i] = (uint16_t)sat16u(a.u16[i] - b.u16[i]));
    case 0x95: L16(u16[i] = (uint16_t)((uint32_t)a.u16[i] * b.u16[i]));
    case 0x96: L16(i16[i] = a.i16[i] < b.i16[i] ? a.i16[i] : b.i16[i]);
    case 0x97: L16(u16[i] = a.u16[i] < b.u16[i] ? a.u16[i] : b.u16[i]);
    case 0x98: L16(i16[i] = a.i16[i] > b.i16[i] ? a.i16[i] : b.i16[i]);
    case 0x99: L16(u16[i] = a.u16[i] > b.u16[i] ? a.u16[i] : b.u16[i]);
    case 0x9B: L16(u16[i] = (uint16_t)((a.u16[i] + b.u16[i] + 1) >> 1));
    case 0x9C: L16(i16[i] = (int16_t)(a.i8[i] * b.i8[i]));
    case 0x9D: L16(i16[i] = (int16_t)(a.i8[i + 8] * b.i8[i + 8]));
    case 0x9E: L16(u16[i] = (uint16_t)(a.u8[i] * b.u8[i]));
    case 0x9F: L16(u16[i] = (uint16_t)(a.u8[i + 8] * b.u8[i + 8]));
    case 0x112:
        L16(u16[i] = (uint16_t)(a.i8[2 * i] * b.i8[2 * i] + a.i8[2 * i + 1] * b.i8[2 * i + 1]));
    /* ---- i32x4 */
    case 0x7E: L32(i32[i] = a.i16[2 * i] + a.i16[2 * i + 1]);
    case 0x7F: L32(u32[i] = (uint32_t)a.u16[2 * i] + a.u16[2 * i + 1]);
    case 0xA0: L32(u32[i] = a.i32[i] < 0 ? 0u - a.u32[i] : a.u32[i]);
    case 0xA1: L32(u32[i] = 0u - a.u32[i]);
    case 0xA3: {
        uint32_t t = 1;
        for (int i = 0; i < 4; i++)
            t &= a.u32[i] != 0;
        dst->u32 = t;
        return PW_TRAP_NONE;
    }
    case 0xA4: {
        uint32_t t = 0;
        for (int i = 0; i < 4; i++)
            t |= (a.u32[i] >> 31) << i;
        dst->u32 = t;
        return PW_TRAP_NONE;
    }
    case 0xAB: L32(u32[i] = a.u32[i] << (sh & 31));
    case 0xAC: L32(i32[i] = a.i32[i] >> (sh & 31));
    case 0xAD: L32(u32[i] = a.u32[i] >> (sh & 31));
    case 0xAE: L32(u32[i] = a.u32[i] + b.u32[i]);
    case 0xB1: L32(u32[i] = a.u32[i] - b.u32[i]);
    case 0xB5: L32(u32[i] = a.u32[i] * b.u32[i]);
    case 0xB6: L32(i32[i] = a.i32[i] < b.i32[i] ? a.i32[i] : b.i32[i]);
    case 0xB7: L32(u32[i] = a.u32[i] < b.u32[i] ? a.u32[i] : b.u32[i]);
    case 0xB8: L32(i32[i] = a.i32[i] > b.i32[i] ? a.i32[i] : b.i32[i]);
    case 0xB9: L32(u32[i] = a.u32[i] > b.u32[i] ? a.u32[i] : b.u32[i]);
    case 0xBA:
        L32(u32[i] = (uint32_t)(a.i16[2 * i] * b.i16[2 * i]) +
                     (uint32_t)(a.i16[2 * i + 1] * b.i16[2 * i + 1]));
    case 0xBC: L32(i32[i] = a.i16[i] * b.i16[i]);
    case 0xBD: L32(i32[i] = a.i16[i + 4] * b.i16[i + 4]);
    case 0xBE: L32(u32[i] = (uint32_t)a.u16[i] * b.u16[i]);
    case 0xBF: L32(u32[i] = (uint32_t)a.u16[i + 4] * b.u16[i + 4]);
    case 0x113:
        for (int i = 0; i < 4; i++) {
            uint32_t t = c.u32[i];
            for (int k = 0; k < 4; k++)
                t += (uint32_t)(a.i8[4 * i + k] * b.i8[4 * i + k]);
            r.u32[i] = t;
        }
        break;
    /* ---- i64x2 */
    case 0xC0: L64(u64[i] = a.i64[i] < 0 ? 0u - a.u64[i] : a.u64[i]);
    case 0xC1: L64(u64[i] = 0u - a.u64[i]);
    case 0xC3: dst->u32 = a.u64[0] != 0 && a.u64[1] != 0; return PW_TRAP_NONE;
    case 0xC4: dst->u32 = (uint32_t)((a.u64[0] >> 63) | (a.u64[1] >> 63) << 1); return PW_TRAP_NONE;
    case 0xCB: L64(u64[i] = a.u64[i] << (sh & 63));
    case 0xCC: L64(i64[i] = a.i64[i] >> (sh & 63));
    case 0xCD: L64(u64[i] = a.u64[i] >> (sh & 63));
    case 0xCE: L64(u64[i] = a.u64[i] + b.u64[i]);
    case 0xD1: L64(u64[i] = a.u64[i] - b.u64[i]);
    case 0xD5: L64(u64[i] = a.u64[i] * b.u64[i]);
    case 0xDC: L64(i64[i] = (int64_t)a.i32[i] * b.i32[i]);
    case 0xDD: L64(i64[i] = (int64_t)a.i32[i + 2] * b.i32[i + 2]);
    case 0xDE: L64(u64[i] = (uint64_t)a.u32[i] * b.u32[i]);
    case 0xDF: L64(u64[i] = (uint64_t)a.u32[i + 2] * b.u32[i + 2]);
    /* ---- f32x4 */
    case 0x67: L32(f32[i] = pw_ceilf(a.f32[i]));
    case 0x68: L32(f32[i] = pw_floorf(a.f32[i]));
    case 0x69: L32(f32[i] = pw_truncf(a.f32[i]));
    case 0x6A: L32(f32[i] = pw_nearbyintf(a.f32[i]));
    case 0xE0: L32(u32[i] = a.u32[i] & 0x7fffffffu);
    case 0xE1: L32(u32[i] = a.u32[i] ^ 0x80000000u);
    case 0xE3: L32(f32[i] = pw_sqrtf(a.f32[i]));
    case 0xE4: L32(f32[i] = a.f32[i] + b.f32[i]);
    case 0xE5: L32(f32[i] = a.f32[i] - b.f32[i]);
    case 0xE6: L32(f32[i] = a.f32[i] * b.f32[i]);
    case 0xE7: L32(f32[i] = a.f32[i] / b.f32[i]);
    case 0xE8:
    case 0x10D: L32(f32[i] = fmin32(a.f32[i], b.f32[i], false));
    case 0xE9:
    case 0x10E: L32(f32[i] = fmin32(a.f32[i], b.f32[i], true));
    case 0xEA: L32(u32[i] = b.f32[i] < a.f32[i] ? b.u32[i] : a.u32[i]);
    case 0xEB: L32(u32[i] = a.f32[i] < b.f32[i] ? b.u32[i] : a.u32[i]);
    case 0x105:
        for (int i = 0; i < 4; i++) {
            float p = a.f32[i] * b.f32[i];
            r.f32[i] = p + c.f32[i];
        }
        break;
    case 0x106:
        for (int i = 0; i < 4; i++) {
            float p = a.f32[i] * b.f32[i];
            r.f32[i] = -p + c.f32[i];
        }
        break;
    /* ---- f64x2 */
    case 0x74: L64(f64[i] = pw_ceil(a.f64[i]));
    case 0x75: L64(f64[i] = pw_floor(a.f64[i]));
    case 0x7A: L64(f64[i] = pw_trunc(a.f64[i]));
    case 0x94: L64(f64[i] = pw_nearbyint(a.f64[i]));
    case 0xEC: L64(u64[i] = a.u64[i] & 0x7fffffffffffffffull);
    case 0xED: L64(u64[i] = a.u64[i] ^ 0x8000000000000000ull);
    case 0xEF: L64(f64[i] = pw_sqrt(a.f64[i]));
    case 0xF0: L64(f64[i] = a.f64[i] + b.f64[i]);
    case 0xF1: L64(f64[i] = a.f64[i] - b.f64[i]);
    case 0xF2: L64(f64[i] = a.f64[i] * b.f64[i]);
    case 0xF3: L64(f64[i] = a.f64[i] / b.f64[i]);
    case 0xF4:
    case 0x10F: L64(f64[i] = fmin64(a.f64[i], b.f64[i], false));
    case 0xF5:
    case 0x110: L64(f64[i] = fmin64(a.f64[i], b.f64[i], true));
    case 0xF6: L64(u64[i] = b.f64[i] < a.f64[i] ? b.u64[i] : a.u64[i]);
    case 0xF7: L64(u64[i] = a.f64[i] < b.f64[i] ? b.u64[i] : a.u64[i]);
    case 0x107:
        for (int i = 0; i < 2; i++) {
            double p = a.f64[i] * b.f64[i];
            r.f64[i] = p + c.f64[i];
        }
        break;
    case 0x108:
        for (int i = 0; i < 2; i++) {
            double p = a.f64[i] * b.f64[i];
            r.f64[i] = -p + c.f64[i];
        }
        break;
    default: return PW_TRAP_UNREACHABLE; /* v128.const is folded by the compiler */
    }
    memcpy(dst, &r, 16);
    return PW_TRAP_NONE;
}
