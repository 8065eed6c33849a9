/* LD_PRELOAD helper for test clusters only: reads of /proc/<pid>/cgroup (and /proc/self/cgroup)
 * show just the cgroup v2 line ("0::/..."). Slurm's cgroup/v2 plugin refuses to start when that
 * file also lists v1 hierarchies ("Hybrid mode is not supported"), which it does on hosts that
 * mount both; with the host's cgroup2 hierarchy mounted at the chroot's /sys/fs/cgroup and this
 * helper preloaded into the daemons, a real slurmstepd makes real v2 job cgroups.
 * Built by chroot.sh: gcc -shared -fPIC -O2 -o cg2only.so cg2only.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

/* "/proc/<one component>/cgroup" exactly. */
static int is_proc_cgroup(const char *path) {
  if (path == NULL || strncmp(path, "/proc/", 6) != 0) return 0;
  const char *slash = strchr(path + 6, '/');
  return slash != NULL && slash != path + 6 && strcmp(slash, "/cgroup") == 0;
}

static int wants_write(int flags) { return (flags & (O_WRONLY | O_RDWR)) != 0; }

/* An in-memory file holding only the "0::" lines of the real one. */
static int open_filtered(const char *path) {
  int (*real_open)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  int in = real_open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return in;
  char buf[1 << 16];
  size_t used = 0;
  ssize_t n;
  while (used < sizeof buf - 1 && (n = read(in, buf + used, sizeof buf - 1 - used)) > 0) used += (size_t)n;
  close(in);
  buf[used] = '\0';
  int out = memfd_create("cg2only", MFD_CLOEXEC);
  if (out < 0) return out;
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "0::", 3) != 0) continue;
    size_t len = strlen(line);
    line[len] = '\n';
    if (write(out, line, len + 1) < 0) break;
  }
  lseek(out, 0, SEEK_SET);
  return out;
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

#define WRAP_OPEN(name)                                                                   \
  int name(const char *path, int flags, ...) {                                            \
    va_list ap;                                                                           \
    va_start(ap, flags);                                                                  \
    mode_t mode = mode_arg(flags, ap);                                                    \
    va_end(ap);                                                                           \
    if (is_proc_cgroup(path) && !wants_write(flags)) return open_filtered(path);          \
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name); \
    return real(path, flags, mode);                                                       \
  }

#define WRAP_OPENAT(name)                                                                 \
  int name(int dirfd, const char *path, int flags, ...) {                                 \
    va_list ap;                                                                           \
    va_start(ap, flags);                                                                  \
    mode_t mode = mode_arg(flags, ap);                                                    \
    va_end(ap);                                                                           \
    if (is_proc_cgroup(path) && !wants_write(flags)) return open_filtered(path);          \
    int (*real)(int, const char *, int, ...) = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name); \
    return real(dirfd, path, flags, mode);                                                \
  }

WRAP_OPEN(open)
WRAP_OPEN(open64)
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

#define WRAP_FOPEN(name)                                                                  \
  FILE *name(const char *path, const char *how) {                                         \
    if (is_proc_cgroup(path) && how[0] == 'r' && strchr(how, '+') == NULL) {              \
      int fd = open_filtered(path);                                                       \
      return fd < 0 ? NULL : fdopen(fd, "r");                                             \
    }                                                                                     \
    FILE *(*real)(const char *, const char *) = (FILE * (*)(const char *, const char *))dlsym(RTLD_NEXT, #name); \
    return real(path, how);                                                               \
  }

WRAP_FOPEN(fopen)
WRAP_FOPEN(fopen64)
