def f(x):
    return {"a": 1}[x]


print("start")
f("b")
