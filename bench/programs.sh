# bench/programs.sh — sourced by build.sh and run.sh: which programs, with which
# arguments (the same workload as ../shared/bench/ANCHORS.md: the programs' defaults).
BENCH_PROGRAMS=(fib sha256 matmul nbody qsort alloc)
bench_args() {
  case "$1" in
    fib) echo 32 ;;
    sha256) echo 8388608 ;;
    matmul) echo 1 ;;
    nbody) echo 1000000 ;;
    qsort) echo 1000000 ;;
    alloc) echo 14 300000 ;;
  esac
}
