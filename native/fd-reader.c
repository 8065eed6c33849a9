/*
 * The node agent's fd reader (src/node/read/fd-native.ts loads it; docs/node-agent.md says when).
 * Two calls, each on one fd directory (`<procfs>/<pid>/fd`), each answering in one string what
 * Node's fs would answer in a string a name:
 *
 *   listing(dir, maxNames) -> the names joined by '/', in the order the kernel lists them, or
 *                             undefined where the directory holds more than maxNames entries.
 *   pathLinks(dir, maxNames) -> [listing, name, link, name, link, ...]: the listing as above and,
 *                             for each entry whose link is a path (starts with '/'), its name and
 *                             link text; undefined past maxNames. An entry gone between the listing
 *                             and its readlink (closed meanwhile) is left out of both.
 *
 * Errors are thrown as Node's fs throws them: an Error whose `code` is the errno's name (ENOENT,
 * EACCES, ...), with `syscall` and `path`. Every buffer is bounded: names by the kernel's NAME_MAX,
 * links by LINK_MAX (longer is ENAMETOOLONG), a listing by maxNames (at most MAX_NAMES), the links
 * kept by MAX_LINK_BYTES (past either, undefined). Nothing here yields: the caller bounds maxNames
 * so that one call stays short.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define READER_VERSION 1
/* The most entries a caller may ask for in one call. */
#define MAX_NAMES 65536
/* The longest link text read; procfs writes at most a page less its terminator. */
#define LINK_MAX 8192
/* The longest directory path taken. */
#define PATH_LEN 4096
/* The most bytes of path links one call keeps (names and links): past it, the caller reads the
   table its own way, a piece at a time. */
#define MAX_LINK_BYTES (4 << 20)

/* One record of getdents64, as the kernel writes it. */
struct dirent64_record {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

/* A growing byte buffer with a hard cap. */
struct text {
  char *bytes;
  size_t used;
  size_t cap;
};

static int text_add(struct text *t, const char *s, size_t n) {
  if (t->used + n > t->cap) {
    size_t cap = t->cap == 0 ? 4096 : t->cap;
    while (cap < t->used + n) cap *= 2;
    char *grown = realloc(t->bytes, cap);
    if (grown == NULL) return -1;
    t->bytes = grown;
    t->cap = cap;
  }
  memcpy(t->bytes + t->used, s, n);
  t->used += n;
  return 0;
}

static const char *errno_name(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case ENOTDIR: return "ENOTDIR";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOMEM: return "ENOMEM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EINVAL: return "EINVAL";
    default: return "EIO";
  }
}

/* Throws an Error like Node's fs errors: `code`, `syscall`, `path`. Returns NULL for the caller. */
static napi_value throw_errno(napi_env env, int e, const char *syscall_name, const char *path) {
  const char *code = errno_name(e);
  char message[PATH_LEN + 64];
  snprintf(message, sizeof message, "%s: %s, %s '%s'", code, strerror(e), syscall_name, path);
  napi_value code_value, message_value, error, value;
  napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &code_value);
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &message_value);
  napi_create_error(env, code_value, message_value, &error);
  napi_set_named_property(env, error, "code", code_value);
  napi_create_string_utf8(env, syscall_name, NAPI_AUTO_LENGTH, &value);
  napi_set_named_property(env, error, "syscall", value);
  napi_create_string_utf8(env, path, NAPI_AUTO_LENGTH, &value);
  napi_set_named_property(env, error, "path", value);
  napi_create_int32(env, -e, &value);
  napi_set_named_property(env, error, "errno", value);
  napi_throw(env, error);
  return NULL;
}

/* The two arguments every call takes: a directory path and a count of names. 0 when they are not. */
static int take_args(napi_env env, napi_callback_info info, char *path, uint32_t *max_names) {
  size_t argc = 2;
  napi_value argv[2];
  size_t length = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return 0;
  if (napi_get_value_string_utf8(env, argv[0], path, PATH_LEN, &length) != napi_ok) return 0;
  if (length == 0 || length >= PATH_LEN - 1) return 0;
  if (napi_get_value_uint32(env, argv[1], max_names) != napi_ok) return 0;
  if (*max_names > MAX_NAMES) *max_names = MAX_NAMES;
  return 1;
}

static int is_dot(const char *name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/*
 * Lists `fd_dir` into `listing` (names joined by '/'); when `links` is given, also reads each
 * entry's link and adds the paths' names and links to it as pairs of NUL-ended strings.
 * Returns 0, 1 where there were more than max_names entries or more than MAX_LINK_BYTES of links,
 * or -errno (with *failed naming the
 * system call).
 */
static int read_dir(int dir, uint32_t max_names, struct text *listing, struct text *links, const char **failed) {
  char records[32768];
  char link[LINK_MAX];
  uint32_t names = 0;
  for (;;) {
    long got = syscall(SYS_getdents64, dir, records, sizeof records);
    if (got < 0) {
      *failed = "scandir";
      return -errno;
    }
    if (got == 0) return 0;
    for (long at = 0; at < got;) {
      const struct dirent64_record *r = (const struct dirent64_record *)(records + at);
      if (r->reclen <= offsetof(struct dirent64_record, name) || at + r->reclen > got) {
        *failed = "scandir";
        return -EIO;
      }
      at += r->reclen;
      if (is_dot(r->name)) continue;
      size_t n = strnlen(r->name, r->reclen - offsetof(struct dirent64_record, name));
      if (links != NULL) {
        ssize_t l = readlinkat(dir, r->name, link, sizeof link);
        if (l < 0 && errno == ENOENT) continue; /* closed since it was listed */
        if (l < 0) {
          *failed = "readlink";
          return -errno;
        }
        if ((size_t)l == sizeof link) {
          *failed = "readlink";
          return -ENAMETOOLONG;
        }
        if (l > 0 && link[0] == '/') {
          if (links->used + n + (size_t)l + 2 > MAX_LINK_BYTES) return 1;
          if (text_add(links, r->name, n + 1) != 0 || text_add(links, link, (size_t)l) != 0 ||
              text_add(links, "", 1) != 0)
            return -ENOMEM;
        }
      }
      if (++names > max_names) return 1;
      if ((names > 1 && text_add(listing, "/", 1) != 0) || text_add(listing, r->name, n) != 0) return -ENOMEM;
    }
  }
}

/* Both calls: `with_links` selects pathLinks. */
static napi_value read_fd_dir(napi_env env, napi_callback_info info, int with_links) {
  char path[PATH_LEN];
  uint32_t max_names = 0;
  if (!take_args(env, info, path, &max_names)) {
    napi_throw_type_error(env, "EINVAL", "expected (directory path, count of names)");
    return NULL;
  }
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (dir < 0) return throw_errno(env, errno, "scandir", path);
  struct text listing = {0}, links = {0};
  const char *failed = "scandir";
  int r = read_dir(dir, max_names, &listing, with_links ? &links : NULL, &failed);
  close(dir);
  napi_value result = NULL;
  if (r < 0) {
    throw_errno(env, -r, failed, path);
  } else if (r == 1) {
    napi_get_undefined(env, &result);
  } else {
    napi_value joined;
    napi_create_string_utf8(env, listing.used == 0 ? "" : listing.bytes, listing.used, &joined);
    if (!with_links) {
      result = joined;
    } else {
      napi_create_array(env, &result);
      napi_set_element(env, result, 0, joined);
      uint32_t index = 1;
      for (size_t at = 0; at < links.used; index++) {
        size_t n = strlen(links.bytes + at);
        napi_value s;
        napi_create_string_utf8(env, links.bytes + at, n, &s);
        napi_set_element(env, result, index, s);
        at += n + 1;
      }
    }
  }
  free(listing.bytes);
  free(links.bytes);
  return result;
}

static napi_value listing(napi_env env, napi_callback_info info) {
  return read_fd_dir(env, info, 0);
}

static napi_value path_links(napi_env env, napi_callback_info info) {
  return read_fd_dir(env, info, 1);
}

NAPI_MODULE_INIT() {
  napi_value value;
  napi_create_function(env, "listing", NAPI_AUTO_LENGTH, listing, NULL, &value);
  napi_set_named_property(env, exports, "listing", value);
  napi_create_function(env, "pathLinks", NAPI_AUTO_LENGTH, path_links, NULL, &value);
  napi_set_named_property(env, exports, "pathLinks", value);
  napi_create_uint32(env, READER_VERSION, &value);
  napi_set_named_property(env, exports, "version", value);
  return exports;
}
