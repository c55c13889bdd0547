/* A slow disk for hookscope's fault tests: every fsync and fdatasync waits SLOW_FSYNC_MS
 * (default 200) before doing the real call, and counts itself in SLOW_FSYNC_COUNT (a file),
 * when set. A failing disk: with FAIL_SYNC_SUFFIX set, the syncs of files whose path ends with
 * it fail with EIO (without syncing) from the FAIL_SYNC_FROM-th (1-based) for FAIL_SYNC_TIMES
 * calls; with FAIL_SYNC_THREAD set, only the syncs made by threads whose name starts with it
 * count, and with FAIL_SYNC_LOG set, each failed sync appends a '!' to that file. A disk that
 * refuses writes: with FAIL_WRITE_SUFFIX and FAIL_WRITE_WHILE set, every
 * pwrite or pwrite64 to a file whose path ends with the suffix fails with EIO while the file
 * named by FAIL_WRITE_WHILE exists. A pwrite to a file opened O_DSYNC (the capture journal's
 * direct appends) counts as a sync too. Loaded with LD_PRELOAD into the process under test; built
 * by tests/faults.rs and bench/soak.sh with the system's C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Whether `fd` names a file whose path ends with `suffix`. */
static int path_ends_with(int fd, const char *suffix) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    size_t len = strlen(suffix);
    return (size_t)n >= len && strcmp(path + n - len, suffix) == 0;
}

/* Whether this write to `fd` must fail (FAIL_WRITE_*). */
static int write_fails(int fd) {
    const char *suffix = getenv("FAIL_WRITE_SUFFIX");
    const char *flag = getenv("FAIL_WRITE_WHILE");
    if (!suffix || !flag || access(flag, F_OK) != 0) return 0;
    return path_ends_with(fd, suffix);
}

static int must_fail(int fd);
static void slow(void);

/* Whether `fd` was opened O_DSYNC (or O_SYNC): each write to it is a sync as well. */
static int synchronous(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_DSYNC);
}

/* pwrite and pwrite64 alike: EIO while write_fails; a write to a file opened O_DSYNC is also a
 * sync (slowed, and failed as FAIL_SYNC_* says); else the real call. */
#define FAILING_PWRITE(name)                                                                  \
    ssize_t name(int fd, const void *buf, size_t count, off_t offset) {                       \
        static ssize_t (*real)(int, const void *, size_t, off_t);                             \
        if (!real) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, #name); \
        if (write_fails(fd)) {                                                                \
            errno = EIO;                                                                      \
            return -1;                                                                        \
        }                                                                                     \
        if (synchronous(fd)) {                                                                \
            if (must_fail(fd)) {                                                              \
                errno = EIO;                                                                  \
                return -1;                                                                    \
            }                                                                                 \
            slow();                                                                           \
        }                                                                                     \
        return real(fd, buf, count, offset);                                                  \
    }

FAILING_PWRITE(pwrite64)
FAILING_PWRITE(pwrite)

/* Whether the calling thread's name starts with `prefix`. */
static int thread_named(const char *prefix) {
    char name[32] = {0};
    FILE *f = fopen("/proc/thread-self/comm", "r");
    if (!f) return 0;
    int read = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    return read && strncmp(name, prefix, strlen(prefix)) == 0;
}

/* Whether this sync of `fd` is one FAIL_SYNC_* says must fail. */
static int must_fail(int fd) {
    static int seen;
    const char *suffix = getenv("FAIL_SYNC_SUFFIX");
    if (!suffix || !path_ends_with(fd, suffix)) return 0;
    const char *thread = getenv("FAIL_SYNC_THREAD");
    if (thread && !thread_named(thread)) return 0;
    int call = __atomic_add_fetch(&seen, 1, __ATOMIC_SEQ_CST);
    const char *from = getenv("FAIL_SYNC_FROM");
    const char *times = getenv("FAIL_SYNC_TIMES");
    long first = from ? atol(from) : 1;
    long count = times ? atol(times) : 1;
    int fail = call >= first && call < first + count;
    const char *log = getenv("FAIL_SYNC_LOG");
    if (fail && log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fputc('!', f);
            fclose(f);
        }
    }
    return fail;
}

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
    if (must_fail(fd)) {
        errno = EIO;
        return -1;
    }
    slow();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (must_fail(fd)) {
        errno = EIO;
        return -1;
    }
    slow();
    return real(fd);
}
