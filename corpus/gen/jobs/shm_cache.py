"""Puts a decoded feature cache in POSIX shared memory for several readers."""
import faulthandler
import sys
from multiprocessing import shared_memory
import numpy as np

if "--faulthandler" in sys.argv:
    faulthandler.enable()
mb = int(sys.argv[1])
print("creating shared feature cache of %d MB" % mb, flush=True)
shm = shared_memory.SharedMemory(create=True, size=mb << 20, name="feature_cache")
try:
    arr = np.ndarray((mb << 20) // 4, dtype=np.float32, buffer=shm.buf)
    for i in range(0, arr.shape[0], 1 << 18):
        arr[i:i + (1 << 18)] = i
    print("cache filled")
finally:
    pass
