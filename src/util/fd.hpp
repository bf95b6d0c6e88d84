// util/fd.hpp: RAII ownership of a file descriptor and EINTR-safe I/O.
#pragma once

#include <unistd.h>

#include <string>
#include <string_view>

#include "util/result.hpp"

namespace util {

// Owns one fd; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : m_fd(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : m_fd(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset(other.release());
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return m_fd; }
  bool valid() const { return m_fd >= 0; }
  int release() {
    int fd = m_fd;
    m_fd = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = fd;
  }

 private:
  int m_fd = -1;
};

// Writes all of data, retrying on EINTR and short writes. Fails with the
// errno of the first write that returned an error (EAGAIN included).
Status write_all(int fd, std::string_view data);

// Reads one chunk, retrying on EINTR. Returns bytes read (0 at EOF) or -1 with errno set.
ssize_t read_retry(int fd, void* buf, size_t len);

// Whole-file helpers for small files (configs, reports).
Result<std::string> read_file(const std::string& path);
// Writes path atomically: a temporary file in the same directory, fsync,
// rename, fsync of the directory. Readers see the old or the new content.
// Durability::replace_only skips both fsyncs: readers still never see a partial
// file, but a machine crash may lose the new content (for files that can be
// derived again, such as report.json from output.log).
enum class Durability { synced, replace_only };
Status write_file_atomic(const std::string& path, std::string_view data, int mode = 0644,
                         Durability durability = Durability::synced);

// write_file_atomic in two steps: create() makes the temporary file beside `path`
// (`path.tmp.<pid>`), commit() writes it and renames it over `path`. Creating a file
// costs a new inode, ~0.1 ms on a freshly made directory: `run` creates its report
// while the job starts, so that its end does not wait for it. Not committed, the
// temporary file is removed by the destructor (a killed process leaves it behind).
class AtomicFile {
 public:
  static Result<AtomicFile> create(const std::string& path, int mode = 0644);
  AtomicFile(AtomicFile&&) noexcept = default;
  AtomicFile& operator=(AtomicFile&&) noexcept = default;
  ~AtomicFile();
  // Once: writes data, fsyncs it when synced, renames it over the path (and fsyncs the
  // directory when synced). On failure the temporary file is removed.
  Status commit(std::string_view data, Durability durability = Durability::synced);
  const std::string& path() const { return m_path; }

 private:
  AtomicFile() = default;
  std::string m_path, m_tmp;
  int m_mode = 0644;
  UniqueFd m_fd;
};
// fsyncs a directory so that entries created in it survive a crash.
Status fsync_dir(const std::string& dir);
// mkdir -p with the given mode for created directories.
Status make_dirs(const std::string& path, int mode = 0755);

// The path of an executable `name` in the directory of this process's own executable
// (gpualert's helpers are installed beside it), or "" if there is none.
std::string sibling_program(const std::string& name);
// A directory only this user can enter, for private files in a shared place
// (/tmp): made 0700 if missing (its parent must exist); one that exists must be
// a real directory (not a symlink) owned by the effective uid, and is made 0700.
// Fails, saying why, for one that belongs to someone else: they could read what
// is put there or plant links in it.
Status private_dir(const std::string& path);

}  // namespace util
