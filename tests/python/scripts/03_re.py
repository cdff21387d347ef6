import re

text = "2024-01-15 alice@example.com 2023-12-31 bob@test.org"
print(re.findall(r"\d{4}-\d{2}-\d{2}", text))
print([m.groupdict() for m in re.finditer(r"(?P<user>\w+)@(?P<host>[\w.]+)", text)])
print(re.sub(r"(\d+)-(\d+)-(\d+)", r"\3/\2/\1", text))
print(re.split(r"\s+", "  a b\tc\n d "))
print(bool(re.fullmatch(r"[a-z]+", "abc")), re.match(r"x", "abc"))
pat = re.compile(r"^(\w+)\s*=\s*(.*)$", re.M)
print(pat.findall("a = 1\nbb= two\nc =3"))
