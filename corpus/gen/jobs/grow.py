import sys, time
chunks = []
print("allocating", flush=True)
for i in range(1000):
    chunks.append(bytearray(16 << 20))
    time.sleep(0.01)
print("done")
