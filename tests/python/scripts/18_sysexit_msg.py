import sys
import atexit

atexit.register(lambda: print("atexit ran"))
print("out")
sys.exit("fatal: something went wrong")
