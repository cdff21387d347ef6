import math
import cmath
import statistics
from fractions import Fraction

print(math.sqrt(2), math.pi, math.e, math.tau)
print(math.factorial(30), math.comb(50, 7), math.gcd(84, 36), math.lcm(4, 6))
print(math.isclose(0.1 + 0.2, 0.3), math.floor(-2.5), math.ceil(-2.5), math.trunc(-2.7))
print(math.log(1000, 10), math.log2(1024), math.hypot(3, 4), math.atan2(1, 1))
print(cmath.sqrt(-4), abs(3 + 4j))
print(statistics.mean([1, 2, 3, 4]), statistics.median([5, 1, 3]), statistics.pstdev([2, 4, 4, 4, 5, 5, 7, 9]))
print(Fraction(3, 4) + Fraction(1, 6), Fraction("0.125"))
print(f"{math.pi:.10f} {1e21:g} {123456789:,} {0.000012345:e}")
