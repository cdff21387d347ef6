"""snapfiles.py — the startup-snapshot files in a code-cache directory, for the tests
of Ruby's and Python's saved snapshots (docs/ruby.md, docs/python.md)."""
import os


def snapshots(cache):
    """The paths of the snapshot files (magic PERISNAP) in cache, sorted."""
    out = []
    for n in sorted(os.listdir(cache)):
        path = os.path.join(cache, n)
        if n.endswith(".pcc") and os.path.isfile(path):
            with open(path, "rb") as f:
                if f.read(8) == b"PERISNAP":
                    out.append(path)
    return out
