/* A slow disk for hookscope's fault tests: every fsync and fdatasync waits SLOW_FSYNC_MS
 * (default 200) before doing the real call, and counts itself in SLOW_FSYNC_COUNT (a file),
 * when set. Loaded with LD_PRELOAD into the process under test; built by tests/faults.rs and
 * bench/soak.sh with the system's C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void slow(void) {
    const char *ms = getenv("SLOW_FSYNC_MS");
    long delay = ms ? atol(ms) : 200;
    struct timespec t = {delay / 1000, (delay % 1000) * 1000000L};
    nanosleep(&t, NULL);
    const char *count = getenv("SLOW_FSYNC_COUNT");
    if (count) {
        FILE *f = fopen(count, "a");
        if (f) {
            fputc('.', f);
            fclose(f);
        }
    }
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    slow();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    slow();
    return real(fd);
}
