try:
    import numpy
    print("numpy available")
except ModuleNotFoundError as e:
    print("ModuleNotFoundError:", e.name)
import numpy
