class AppError(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def risky(n):
    if n == 0:
        raise AppError(42, "zero")
    return 10 / (n - 1)


for n in (0, 1, 2):
    try:
        print(risky(n))
    except AppError as e:
        print("app", e.code, e)
    except ZeroDivisionError as e:
        print("zde", e)
    else:
        print("no error")
    finally:
        print("finally", n)

try:
    try:
        {}["missing"]
    except KeyError as e:
        raise ValueError("wrapped") from e
except ValueError as e:
    print(repr(e), repr(e.__cause__))

try:
    raise ExceptionGroup("group", [TypeError("t"), ValueError("v")])
except* TypeError as eg:
    print("caught", [str(x) for x in eg.exceptions])
except* ValueError as eg:
    print("caught", [str(x) for x in eg.exceptions])
