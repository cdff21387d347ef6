#!/bin/sh
# tests/hygiene/format.sh SRC_DIR — every C source and header of the tree is formatted
# as .clang-format says (clang-format --dry-run -Werror), so that the code stays in
# one style without anyone reformatting other people's lines. Lists the files that
# drift and the command that fixes them. Without clang-format: a failure under
# CI=true (scripts/deps.sh installs it), otherwise skipped (exit 77).
set -u
src="$1"
cd "$src" || exit 1
if ! command -v clang-format >/dev/null 2>&1; then
    if [ "${CI:-}" = "true" ]; then
        echo "hygiene.format: clang-format is not installed (scripts/deps.sh installs it)" >&2
        exit 1
    fi
    echo "hygiene.format: skipped: clang-format is not installed"
    exit 77
fi
# The tracked files in a git checkout (nothing untracked or generated); every .c/.h
# beneath the source folders in an unpacked source tarball.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h')
else
    files=$(find src include tests bench fuzz tools -name '*.[ch]' 2>/dev/null | sort)
fi
[ -n "$files" ] || { echo "hygiene.format: no C files found under $src" >&2; exit 1; }
# One clang-format for all the files; its diagnostics name each file that drifts.
# shellcheck disable=SC2086 # the list is split on purpose (paths have no spaces)
out=$(clang-format --dry-run -Werror $files 2>&1)
rc=$?
bad=$(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u | tr '\n' ' ')
if [ $rc -ne 0 ] && [ -z "$bad" ]; then
    printf 'hygiene.format: clang-format failed:\n%s\n' "$out" >&2
    exit 1
fi
n=$(printf '%s\n' $files | wc -l)
if [ -n "$bad" ]; then
    echo "hygiene.format: these files are not formatted as .clang-format says:"
    for f in $bad; do echo "  $f"; done
    echo "fix: clang-format -i $bad  (or: make format)"
    exit 1
fi
echo "hygiene.format: $n files formatted as .clang-format says"
