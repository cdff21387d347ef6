print("hello, room")
print(1 + 2, 2 ** 100, 7 / 2, 7 // 2, -7 % 3)
print(repr(0.1 + 0.2), round(2.675, 2), float("inf"), -0.0)
