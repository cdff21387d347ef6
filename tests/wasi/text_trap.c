/*
 * text_trap.c — preloaded into `peri` by cold_start_test.py. Before main, it takes
 * every access away from a range of the program's own text (PERI_TEXT_TRAP="LO:HI",
 * file offsets in hex, page-aligned: the cold `.text` after the hot section of
 * cmake/hot_text.cmake), so that a run which enters a function outside the hot list
 * dies of SIGSEGV instead of silently making another 64 KiB of text resident.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((constructor)) static void text_trap(void) {
    const char *range = getenv("PERI_TEXT_TRAP");
    char exe[4096], line[4352];
    unsigned long lo, hi;
    if (!range || sscanf(range, "%lx:%lx", &lo, &hi) != 2 || hi <= lo) return;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) abort();
    exe[n] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) abort();
    int done = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b, off;
        char perms[8], path[4096];
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &a, &b, perms, &off, path) != 5)
            continue;
        if (strcmp(perms, "r-xp") || strcmp(path, exe) || lo < off || hi > off + (b - a)) continue;
        if (mprotect((void *)(a + (lo - off)), hi - lo, PROT_NONE)) abort();
        done = 1;
    }
    fclose(f);
    if (!done) abort(); /* the range is not in the text: the test is wrong, not peri */
}
