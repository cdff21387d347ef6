#!/bin/sh
# scripts/json-switch.sh: switches a Peri-C tree from jansson to the project's own JSON
# library (include/peri/json.h, docs/json.md) by a mechanical rename. Re-runnable: a
# converted file has nothing left to rename.
#
#   scripts/json-switch.sh [--check] [DIR...]     (default DIRs: src include tests bench examples)
#
# The names renamed are exactly the API json.h declares: every pj_X / PJ_X there turns
# json_X / JSON_X into pj_X / PJ_X (json_t -> pj_t, json_int_t -> pj_int_t, ...), so a
# local identifier that merely starts with json_ (json_text, json_out) is left alone.
# `#include <jansson.h>` becomes `#include "peri/json.h"`. Files that include both
# headers (the differential tests and the benchmark that compare the two libraries on
# purpose) are skipped, and so is the library itself (json.h, src/base/json_*, whose
# error texts quote jansson's names). --check only lists what would change.
# Afterwards it prints every remaining use of a jansson name the library does not have,
# which then needs a hand edit; the exit status is 1 when there is any (0 when clean).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
hdr="$here/include/peri/json.h"
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
[ $# -gt 0 ] || set -- src include tests bench examples
cd "$here"
[ -f "$hdr" ] || { echo "json-switch.sh: $hdr is missing" >&2; exit 2; }

# The API names json.h provides, without the prefix (public ones only: no pj__).
lower=$(grep -oE '\bpj_[a-z][a-z0-9_]*' "$hdr" | sed 's/^pj_//' | sort -u | tr '\n' '|' | sed 's/|$//')
upper=$(grep -oE '\bPJ_[A-Z][A-Z0-9_]*' "$hdr" | sed 's/^PJ_//' | sort -u | tr '\n' '|' | sed 's/|$//')
[ -n "$lower" ] && [ -n "$upper" ] || { echo "json-switch.sh: no API names found in $hdr" >&2; exit 2; }

files=$(grep -rlE --include='*.c' --include='*.h' 'jansson\.h|\bjson_[a-z]|\bJSON_[A-Z]' "$@" 2>/dev/null || true)
changed=0
for f in $files; do
    case "$f" in # the library itself speaks of jansson's names on purpose (its error texts)
    */peri/json.h | include/peri/json.h | */base/json_*.[ch] | src/base/json_*.[ch]) continue ;;
    esac
    if grep -q 'jansson\.h' "$f" && grep -q 'peri/json\.h' "$f"; then
        echo "skipped (uses both libraries on purpose): $f"
        continue
    fi
    tmp="$f.json-switch.$$"
    sed -E \
        -e 's@#include <jansson\.h>@#include "peri/json.h"@' \
        -e "s/\\bjson_($lower)\\b/pj_\\1/g" \
        -e "s/\\bJSON_($upper)\\b/PJ_\\1/g" "$f" >"$tmp"
    if cmp -s "$f" "$tmp"; then
        rm -f "$tmp"
    elif [ $check -eq 1 ]; then
        echo "would change: $f"
        rm -f "$tmp"
        changed=$((changed + 1))
    else
        cat "$tmp" >"$f" && rm -f "$tmp"
        changed=$((changed + 1))
    fi
done
echo "json-switch.sh: $changed file(s) $([ $check -eq 1 ] && echo "to change" || echo changed)"

# What is left: jansson types, constants or includes json.h lacks, then json_ calls that
# are not defined in the tree itself (a static helper such as json_or_string is fine; a
# name inside a string, such as SQLite's json_valid, is listed and can be ignored).
left=$(grep -rnE --include='*.c' --include='*.h' '#include <jansson\.h>|\bjson_[a-z_]+_t\b|\bJSON_[A-Z_]+\b' "$@" 2>/dev/null | while IFS= read -r line; do
    f=${line%%:*}
    if grep -q 'peri/json\.h' "$f" && grep -q 'jansson\.h' "$f"; then continue; fi
    echo "  $line"
done || true)
calls=$(grep -rnoE --include='*.c' --include='*.h' '\bjson_[a-z_]+\(' "$@" 2>/dev/null | sort -u | while IFS= read -r line; do
    f=${line%%:*}
    name=${line##*:}
    name=${name%(}
    if grep -q 'peri/json\.h' "$f" && grep -q 'jansson\.h' "$f"; then continue; fi
    if grep -rqE --include='*.c' --include='*.h' "^(static )?[a-z_ ]+[ *]$name\(" "$@"; then continue; fi
    echo "  $line"
done || true)
if [ -z "$left$calls" ]; then
    echo "json-switch.sh: nothing left for a hand edit"
    exit 0
fi
echo "json-switch.sh: left for a hand edit (or to ignore, when inside a string):"
[ -n "$left" ] && echo "$left"
[ -n "$calls" ] && echo "$calls"
exit 1
