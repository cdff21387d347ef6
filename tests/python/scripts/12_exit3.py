import sys
print("before exit")
sys.stdout.flush()
sys.exit(3)
print("never")
