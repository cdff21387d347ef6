# The SIMD benchmark programs (bench/simd/*.c) and their default arguments.
SIMD_PROGRAMS=(blur sgemm bytecount lanehash rgb)
