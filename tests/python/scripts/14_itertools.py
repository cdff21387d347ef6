import functools
import itertools
import operator

print(list(itertools.permutations("abc", 2)))
print(list(itertools.combinations(range(5), 3)))
print(list(itertools.product([0, 1], repeat=3)))
print(list(itertools.accumulate([1, 2, 3, 4], operator.mul)))
print([(k, len(list(g))) for k, g in itertools.groupby("aaabccdddd")])
print(list(itertools.islice(itertools.cycle("xy"), 5)), list(itertools.chain.from_iterable([[1], [2, 3]])))
print(list(itertools.zip_longest("ab", "xyz", fillvalue="-")), list(itertools.pairwise(range(4))))
print(functools.reduce(operator.add, range(101)))


@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


print(fib(200), fib.cache_info().hits)
print(sorted(["b", "A", "c"], key=str.lower), sorted([3, 1, 2], reverse=True))
