from dataclasses import dataclass, field, asdict, replace
from typing import List, Optional
import enum


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@dataclass(order=True, frozen=True)
class Item:
    priority: int
    name: str = field(compare=False)
    tags: tuple = ()


@dataclass
class Bag:
    items: List[Item] = field(default_factory=list)
    owner: Optional[str] = None

    def add(self, it):
        self.items.append(it)
        return self


b = Bag(owner="ann").add(Item(3, "c")).add(Item(1, "a", ("x",))).add(Item(2, "b"))
print(sorted(b.items))
print(asdict(b))
print(replace(b.items[0], priority=9))
try:
    b.items[0].priority = 5
except Exception as e:
    print(type(e).__name__, e)
print(Color.RED, Color(2), [c.name for c in Color])
