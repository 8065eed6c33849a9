/*
 * A FUSE filesystem whose getattr misbehaves on demand, for the node agent's tests: the job files
 * on Lustre, GPFS or NFS that an agent must never wait on or be blinded by.
 *
 *   fuse-trap MOUNTPOINT MODE [-o OPTIONS]
 *
 * The root directory holds `job.dat` and `uverbs3` (a regular file named like a verbs device).
 * Lookups and opens always succeed, so a process can open the files; once armed (SIGUSR1), a
 * getattr of either file is answered per MODE:
 *   block   never answered (a server that is down; the request waits until the mount goes)
 *   eacces  EACCES (a user's own mount refusing root)
 *   eio     EIO (an NFS fail-over)
 *   ok      answered
 * Attributes are never cached (timeouts 0), so every stat reaches the daemon. It prints
 * `armed N` on stdout for each getattr it trapped. SIGTERM, SIGINT or SIGHUP unmount and exit.
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum mode { MODE_OK, MODE_BLOCK, MODE_EACCES, MODE_EIO };

static enum mode trap_mode;
static volatile sig_atomic_t armed;
static unsigned long trapped;

static const char *const names[] = {NULL, NULL, "job.dat", "uverbs3"};
#define LAST_INO 3

static void on_usr1(int sig) {
  (void)sig;
  armed = 1;
}

static void attributes(fuse_ino_t ino, struct stat *st) {
  memset(st, 0, sizeof *st);
  st->st_ino = ino;
  st->st_uid = getuid();
  st->st_gid = getgid();
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
  }
}

static void trap_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  struct fuse_entry_param e;
  memset(&e, 0, sizeof e);
  for (fuse_ino_t ino = 2; ino <= LAST_INO && parent == FUSE_ROOT_ID; ino++) {
    if (strcmp(name, names[ino]) != 0) continue;
    e.ino = ino;
    attributes(ino, &e.attr);
    fuse_reply_entry(req, &e);
    return;
  }
  fuse_reply_err(req, ENOENT);
}

static void trap_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)fi;
  struct stat st;
  if (ino != FUSE_ROOT_ID && armed && trap_mode != MODE_OK) {
    printf("armed %lu\n", ++trapped);
    fflush(stdout);
    if (trap_mode == MODE_BLOCK) return; /* never answered: the caller waits */
    fuse_reply_err(req, trap_mode == MODE_EACCES ? EACCES : EIO);
    return;
  }
  attributes(ino, &st);
  fuse_reply_attr(req, &st, 0);
}

static void trap_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  if (ino == FUSE_ROOT_ID) {
    fuse_reply_err(req, EISDIR);
    return;
  }
  fuse_reply_open(req, fi);
}

static void trap_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)ino;
  (void)size;
  (void)off;
  (void)fi;
  fuse_reply_buf(req, NULL, 0);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = trap_lookup,
    .getattr = trap_getattr,
    .open = trap_open,
    .read = trap_read,
};

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MOUNTPOINT block|eacces|eio|ok [-o OPTIONS]\n", argv[0]);
    return 2;
  }
  const char *mnt = argv[1];
  const char *m = argv[2];
  trap_mode = strcmp(m, "block") == 0    ? MODE_BLOCK
              : strcmp(m, "eacces") == 0 ? MODE_EACCES
              : strcmp(m, "eio") == 0    ? MODE_EIO
              : strcmp(m, "ok") == 0     ? MODE_OK
                                         : (fprintf(stderr, "unknown mode %s\n", m), exit(2), MODE_OK);
  signal(SIGUSR1, on_usr1);
  /* argv[0] and any options after the mode (-o dev, -o fsname=...) go to libfuse. */
  char *fargv[8] = {argv[0]};
  int fargc = 1;
  for (int i = 3; i < argc && fargc < 7; i++) fargv[fargc++] = argv[i];
  struct fuse_args args = FUSE_ARGS_INIT(fargc, fargv);
  struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
  if (se == NULL) return 1;
  if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mnt) != 0) return 1;
  printf("mounted %s\n", mnt);
  fflush(stdout);
  int rc = fuse_session_loop(se);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return rc == 0 ? 0 : 1;
}
