/*
 * text_probe.c — preloaded into `peri` by cold_start_test.py: at exit (a destructor,
 * which runs after peri's main has returned) it writes to the file named by
 * PERI_TEXT_PROBE_OUT how many KiB of the program's own executable mapping are
 * resident (the Rss of its r-xp line in /proc/self/smaps), i.e. how much of peri's
 * text the run made the kernel map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((destructor)) static void text_probe(void) {
    const char *out = getenv("PERI_TEXT_PROBE_OUT");
    char exe[4096], line[4352];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!out || n <= 0) return;
    exe[n] = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return;
    long kib = 0;
    int in_text = 0;
    while (fgets(line, sizeof line, f)) {
        char perms[8], path[4096];
        long rss;
        if (sscanf(line, "%*x-%*x %7s %*s %*s %*s %4095s", perms, path) == 2)
            in_text = !strcmp(perms, "r-xp") && !strcmp(path, exe);
        else if (in_text && sscanf(line, "Rss: %ld kB", &rss) == 1)
            kib += rss;
    }
    fclose(f);
    FILE *o = fopen(out, "w");
    if (!o) return;
    fprintf(o, "%ld\n", kib);
    fclose(o);
}
