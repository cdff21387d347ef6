/*
 * rusage_run.c — runs one command (stdout/stderr to /dev/null) and prints its
 * user+sys CPU seconds, peak RSS (KiB) and wall seconds, from wait4(). Used by
 * bench/cold_start.py: being a small C program, the peak RSS it reports is the
 * command's own (a fork of a large interpreter would count the interpreter's).
 * Build: cc -O2 -o rusage_run rusage_run.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f %ld %.6f %d\n",
           ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec * 1e-6,
           ru.ru_maxrss, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
           WIFEXITED(status) ? WEXITSTATUS(status) : 128);
    return 0;
}
