import base64
import hashlib
import zlib
import binascii

data = "Peri-C 房间 ✓".encode()
for name in ("md5", "sha1", "sha256", "sha512", "sha3_256", "blake2b"):
    print(name, hashlib.new(name, data).hexdigest())
print(hashlib.sha256(b"a" * 10000).hexdigest())
z = zlib.compress(data * 50, 9)
print(len(z), zlib.decompress(z) == data * 50, zlib.crc32(data), zlib.adler32(data))
print(binascii.hexlify(data), base64.b64encode(data), base64.b32encode(b"xyz"))
