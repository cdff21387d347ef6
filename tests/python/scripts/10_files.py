import errno
import os
import pathlib

os.makedirs("work/sub", exist_ok=True)
with open("work/a.txt", "w", encoding="utf-8") as f:
    f.write("line 1\nzeile 2 ü\n")
with open("work/a.txt", "a") as f:
    print("line 3", file=f)
p = pathlib.Path("work/sub/b.bin")
p.write_bytes(bytes(range(256)))
print(open("work/a.txt", encoding="utf-8").read(), end="")
print(len(p.read_bytes()), p.stat().st_size, p.suffix, p.stem)
print(sorted(os.listdir("work")), os.path.exists("work/nope"))
os.rename("work/a.txt", "work/c.txt")
print(sorted(x.name for x in pathlib.Path("work").iterdir()))
os.remove("work/c.txt")
with open("work/sub/b.bin", "rb") as f:
    f.seek(250)
    print(f.read(), f.tell())
try:
    open("work/none.txt")
except FileNotFoundError as e:
    print("FileNotFoundError", errno.errorcode[e.errno])
