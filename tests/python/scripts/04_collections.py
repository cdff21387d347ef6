from collections import Counter, OrderedDict, defaultdict, deque, namedtuple, ChainMap

c = Counter("mississippi")
print(c.most_common(3), sorted(c.items()))
d = defaultdict(list)
for w in ["apple", "avocado", "banana", "blueberry", "cherry"]:
    d[w[0]].append(w)
print(dict(d))
q = deque(range(5), maxlen=4)
q.appendleft(-1)
q.rotate(2)
print(q)
P = namedtuple("P", "x y")
p = P(3, 4)
print(p, p._replace(y=9), p._asdict())
od = OrderedDict(a=1, b=2)
od.move_to_end("a")
print(list(od))
print(ChainMap({"a": 1}, {"a": 2, "b": 3})["b"])
