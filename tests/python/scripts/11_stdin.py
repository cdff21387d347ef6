import sys

lines = sys.stdin.read().splitlines()
total = 0
for i, line in enumerate(lines, 1):
    words = line.split()
    total += len(words)
    print(f"{i:3d}: {line[::-1]}")
print("words:", total, "lines:", len(lines))
