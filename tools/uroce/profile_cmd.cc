/**
 * @file profile_cmd.cc
 * @brief The profile commands (profile_cmd.h).
 */
#include "profile_cmd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "profile_edit.h"

namespace uroce::tool {

bool read_text(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream os;
  os << in.rdbuf();
  *out = os.str();
  return true;
}

std::string config_file(const std::string& given, std::string* tried) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("UROCE_CONFIG"); env && *env) return env;
  *tried = "./uroce.toml, /etc/uroce/uroce.toml";
  for (const char* p : {"./uroce.toml", "/etc/uroce/uroce.toml"})
    if (access(p, F_OK) == 0) return p;
  return {};
}

namespace {

int unknown(const std::string& name) {
  std::fprintf(stderr,
               "uroce: unknown profile \"%s\"; known profiles: lossless, lossy, hpc, storage\n",
               name.c_str());
  return 2;
}

/// Reads the file and computes the edited text; returns 0 or the exit status.
int prepare(const ProfileOptions& o, std::string* path, std::string* before, std::string* after) {
  if (!is_profile(o.name)) return unknown(o.name);
  std::string tried;
  *path = config_file(o.config, &tried);
  if (path->empty()) {
    std::fprintf(stderr, "uroce: no configuration file (tried %s); name one with --config FILE\n",
                 tried.c_str());
    return 1;
  }
  if (!read_text(*path, before)) {
    std::fprintf(stderr, "uroce: %s: cannot read: %s\n", path->c_str(), std::strerror(errno));
    return 1;
  }
  std::string err;
  if (!apply_profile_text(*before, *path, o.name, o.device, after, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

bool write_atomically(const std::string& path, const std::string& text, mode_t mode,
                      std::string* err) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    *err = tmp + ": cannot create: " + std::strerror(errno);
    return false;
  }
  fchmod(fd, mode);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = tmp + ": cannot write: " + std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    *err = tmp + ": cannot write: " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *err = path + ": cannot replace: " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool write_atomically_with_backup(const std::string& path, const std::string& old_text,
                                  const std::string& text, std::string* err) {
  struct stat st;
  mode_t mode = stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  if (!write_atomically(path + ".bak", old_text, mode, err)) return false;
  return write_atomically(path, text, mode, err);
}

int profile_list() {
  for (const ProfileInfo& p : profiles())
    std::printf("%-9s %s\n", std::string(p.name).c_str(), std::string(p.summary).c_str());
  return 0;
}

int profile_show(const ProfileOptions& o) {
  if (!is_profile(o.name)) return unknown(o.name);
  std::printf("# profile %s, as `uroce profile apply %s` writes it (default DSCP map)\n%s",
              o.name.c_str(), o.name.c_str(), profile_snippet(o.name).c_str());
  return 0;
}

int profile_apply(const ProfileOptions& o) {
  std::string path, before, after, err;
  if (int rc = prepare(o, &path, &before, &after)) return rc;
  if (after == before) {
    std::printf("%s already uses profile %s; nothing written\n", path.c_str(), o.name.c_str());
    return 0;
  }
  if (!write_atomically_with_backup(path, before, after, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  for (const std::string& l : effective_diff(before, after, path)) std::printf("  %s\n", l.c_str());
  std::printf(
      "applied profile %s to %s (backup %s.bak); running programs pick it up when "
      "they next open the device\n",
      o.name.c_str(), path.c_str(), path.c_str());
  return 0;
}

int profile_diff(const ProfileOptions& o) {
  std::string path, before, after;
  if (int rc = prepare(o, &path, &before, &after)) return rc;
  std::vector<std::string> d = effective_diff(before, after, path);
  if (d.empty())
    std::printf("profile %s changes no effective setting in %s\n", o.name.c_str(), path.c_str());
  for (const std::string& l : d) std::printf("%s\n", l.c_str());
  return 0;
}

}  // namespace uroce::tool
