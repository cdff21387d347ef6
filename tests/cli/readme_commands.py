#!/usr/bin/env python3
"""readme_commands.py README BUILD: every command README.md shows exists.

For each shell code block of the README (```sh), every line that runs `peri`,
`build/peri`, `build/embed` or `make` is checked:
  - `peri SUB ...`: SUB is a command of `peri --help`, and every `--flag` on the line
    appears in `peri SUB --help` (or, for `peri` alone, in `peri --help`);
  - `build/embed ...`: every `--flag` appears in `build/embed --help`;
  - `make TARGET`: TARGET is a target of the Makefile.
Lines are taken after an optional `$ ` prompt and an optional `cd DIR &&`; pipes and
comments end a command. Exit 0 = every command exists, 1 = some do not (each listed).
"""
import os
import re
import shlex
import subprocess
import sys

readme, build = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.abspath(readme))
peri = os.path.join(build, "peri")
embed = os.path.join(build, "embed")
problems = []
checked = 0


def help_text(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    return r.stdout + r.stderr


def commands_of(block):
    for line in block.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        elif line.startswith("#") or not line:
            continue
        line = re.sub(r"^cd \S+ && ", "", line)
        line = line.split(" | ")[0]
        line = re.sub(r"\s+#.*$", "", line)
        if "&&" in line:
            for part in line.split("&&"):
                yield part.strip()
        else:
            yield line


top_help = help_text([peri, "--help"])
subcommands = set(re.findall(r"^  (\S+)\s", top_help, re.M))
make_targets = set()
for line in open(os.path.join(root, "Makefile")):
    m = re.match(r"^([A-Za-z][\w-]*):", line)
    if m:
        make_targets.add(m.group(1))

text = open(readme).read()
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    for cmd in commands_of(block):
        try:
            words = shlex.split(cmd)
        except ValueError:
            words = cmd.split()
        if not words:
            continue
        # environment assignments before the command (FOO=bar peri ...)
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words = words[1:]
        if not words:
            continue
        prog = os.path.basename(words[0])
        flags = [w.split("=")[0] for w in words[1:] if w.startswith("--")]
        if words[0] in ("peri", "build/peri") or words[0].endswith("/build/peri"):
            checked += 1
            sub = words[1] if len(words) > 1 and not words[1].startswith("-") else None
            if sub and sub not in subcommands:
                problems.append("`%s`: peri has no command %r" % (cmd, sub))
                continue
            if sub in ("wasm", "isolate", "place", "mcp") and len(words) > 2:
                h = help_text([peri, sub, words[2], "--help"]) + help_text([peri, sub, "--help"])
            elif sub:
                h = help_text([peri, sub, "--help"])
            else:
                h = top_help + help_text([peri, "tui", "--help"])
            for f in flags:
                if f == "--help":
                    continue
                if not re.search(re.escape(f) + r"(?![\w-])", h):
                    problems.append("`%s`: %s is not in `peri %s --help`" % (cmd, f, sub or ""))
        elif prog == "embed":
            checked += 1
            if "--agent" in words:  # what follows --agent, up to --, is the agent's command
                flags = [f for f in flags[: flags.index("--agent") + 1]]
            h = help_text([embed, "--help"])
            for f in flags:
                if not re.search(re.escape(f) + r"(?![\w-])", h):
                    problems.append("`%s`: %s is not in `build/embed --help`" % (cmd, f))
        elif words[0] == "make":
            checked += 1
            for t in words[1:]:
                if "=" in t:
                    continue
                if t not in make_targets:
                    problems.append("`%s`: the Makefile has no target %r" % (cmd, t))

for p in problems:
    print("FAIL: " + p)
if checked < 10:
    print("FAIL: only %d commands found in %s; is the parser broken?" % (checked, readme))
    sys.exit(1)
if problems:
    sys.exit(1)
print("PASS: %d README commands exist" % checked)
