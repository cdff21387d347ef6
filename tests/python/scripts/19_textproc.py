import csv
import io
import string
import textwrap
import struct
import heapq
import bisect

buf = io.StringIO()
w = csv.writer(buf)
w.writerows([["name", "qty"], ["apple, red", 3], ['say "hi"', 4]])
print(buf.getvalue(), end="")
print(list(csv.DictReader(io.StringIO(buf.getvalue()))))
print(textwrap.fill("The quick brown fox jumps over the lazy dog " * 3, width=30))
print(string.Template("$who likes $what").substitute(who="tim", what="kung pao"))
print(struct.pack("<IhQ", 1, -2, 3), struct.unpack(">f", b"\x40\x49\x0f\xdb"))
h = [5, 1, 8, 3, 2]
heapq.heapify(h)
print([heapq.heappop(h) for _ in range(3)], heapq.nlargest(2, [4, 9, 1, 7]))
a = [1, 3, 5, 7]
bisect.insort(a, 4)
print(a, bisect.bisect_left(a, 5))
print("%s %5.2f %-4d| %x %o %r" % ("s", 3.14159, 42, 255, 8, "q"))
