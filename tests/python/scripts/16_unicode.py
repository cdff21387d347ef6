import unicodedata

s = "Grüße, 世界! 🐍 café"
print(s, len(s), len(s.encode("utf-8")), s.upper(), s.casefold())
print([unicodedata.name(c) for c in "é🐍"])
print(unicodedata.normalize("NFD", "é").encode("utf-8"), unicodedata.category("世"))
print(s[::-1], s.encode("utf-16-le")[:8], "ß".upper(), "İ".lower().encode())
print("{:>10}|{:<6}|{:^7}".format("中文", "ab", "x"))
print(ascii(s), repr("\x00\t\u200b"))
print(sorted(["ä", "a", "z", "é"]), ord("€"), chr(0x1F600))
print("καλημέρα".title(), "straße".encode("latin-1"), "ﬁ".upper())
