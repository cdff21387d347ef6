import abc
from typing import Iterator


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self) -> float: ...

    def __repr__(self):
        return f"{type(self).__name__}(area={self.area():.3f})"


class Rect(Shape):
    def __init__(self, w, h):
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h


class Square(Rect):
    def __init__(self, s):
        super().__init__(s, s)


class Vec:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y)

    def __iter__(self) -> Iterator[int]:
        yield self.x
        yield self.y

    def __eq__(self, o):
        return tuple(self) == tuple(o)


print([Rect(2, 3.5), Square(4)], Square.__mro__[1].__name__)
print(list(Vec(1, 2) + Vec(3, 4)), Vec(1, 1) == Vec(1, 1))
try:
    Shape()
except TypeError as e:
    print("TypeError:", e)


def gen():
    total = 0
    while True:
        x = yield total
        if x is None:
            return total
        total += x


g = gen()
next(g)
print([g.send(i) for i in range(1, 5)])
print({k: v for k, v in zip("abc", range(3))}, {x % 3 for x in range(10)}, [*range(3), *"ab"])
match {"cmd": "move", "to": [1, 2]}:
    case {"cmd": "move", "to": [x, y]}:
        print("move", x, y)
    case _:
        print("other")
