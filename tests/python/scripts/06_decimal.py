from decimal import Decimal, getcontext, ROUND_HALF_UP, localcontext

print(Decimal("0.1") + Decimal("0.2"))
print(Decimal("1") / Decimal("7"))
getcontext().prec = 50
print(Decimal(2).sqrt())
print(Decimal("2.675").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
with localcontext() as ctx:
    ctx.prec = 5
    print(Decimal(1) / Decimal(3))
print(Decimal("1e-30").normalize(), Decimal("-0"), Decimal("NaN").is_nan())
total = sum(Decimal("19.99") for _ in range(7))
print(total, total.as_tuple())
