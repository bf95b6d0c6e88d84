#include "util/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace util {

Error errno_error(const std::string& context, int err) {
  return Error{context + ": " + std::strerror(err)};
}

Error errno_error(const std::string& context) { return errno_error(context, errno); }

Status write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno_error("write");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return ok_status();
}

ssize_t read_retry(int fd, void* buf, size_t len) {
  for (;;) {
    ssize_t n = ::read(fd, buf, len);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return n;
  }
}

Result<std::string> read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return errno_error("open " + path);
  }
  // Read straight into a string of the file's size, not through a stack buffer
  // into a string grown in steps. Whether there is more (a file that grows
  // meanwhile, or says size 0, like /proc) is asked with a small read first: growing
  // the string by 64 KiB just to see EOF zero-filled 16 pages, a page fault each,
  // for every small file (/etc/passwd, the rules cache) read at a job's start.
  struct stat st {};
  std::string out;
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
    out.resize(static_cast<size_t>(st.st_size));
  }
  size_t have = 0;
  for (;;) {
    if (have == out.size()) {
      char probe[4096];
      ssize_t n = read_retry(fd.get(), probe, sizeof probe);
      if (n < 0) {
        return errno_error("read " + path);
      }
      if (n == 0) {
        break;
      }
      out.append(probe, static_cast<size_t>(n));
      have += static_cast<size_t>(n);
      if (static_cast<size_t>(n) == sizeof probe) {
        out.resize(have + 65536);  // more is likely: read on in large steps
      }
      continue;
    }
    ssize_t n = read_retry(fd.get(), out.data() + have, out.size() - have);
    if (n < 0) {
      return errno_error("read " + path);
    }
    if (n == 0) {
      break;
    }
    have += static_cast<size_t>(n);
  }
  out.resize(have);
  return out;
}

Status fsync_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    return errno_error("open " + dir);
  }
  if (::fsync(fd.get()) != 0) {
    return errno_error("fsync " + dir);
  }
  return ok_status();
}

Result<AtomicFile> AtomicFile::create(const std::string& path, int mode) {
  AtomicFile f;
  f.m_path = path;
  f.m_mode = mode;
  // A new file of our own, never an existing one: in a directory someone else can
  // write to, a planted `report.json.tmp.<pid>` symlink would otherwise make us
  // write through it. A name taken (a leftover, a plant, or another AtomicFile of
  // this process for the same path) gets the next one.
  for (int n = 0; !f.m_fd.valid(); ++n) {
    f.m_tmp = path + ".tmp." + std::to_string(::getpid()) + (n > 0 ? "." + std::to_string(n) : "");
    f.m_fd.reset(
        ::open(f.m_tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!f.m_fd.valid() && (errno != EEXIST || n >= 100)) {
      return errno_error("create " + f.m_tmp);
    }
  }
  return f;
}

AtomicFile::~AtomicFile() {
  if (m_fd.valid()) {
    ::unlink(m_tmp.c_str());
  }
}

Status AtomicFile::commit(std::string_view data, Durability durability) {
  if (!m_fd.valid()) {
    return Error{"write " + m_path + ": already written or never created"};
  }
  const bool sync = durability == Durability::synced;
  auto fail = [&](Status err) {
    m_fd.reset();
    ::unlink(m_tmp.c_str());
    return err;
  };
  if (auto st = write_all(m_fd.get(), data); !st) {
    return fail(errno_error("write " + m_tmp));
  }
  if (sync && ::fsync(m_fd.get()) != 0) {
    return fail(errno_error("fsync " + m_tmp));
  }
  // The name must still be the file written: one swapped for a link meanwhile (by
  // whoever can write to the directory) is not renamed over the path; the data goes
  // to a new temporary file instead.
  struct stat mine {
  }, named{};
  if (::fstat(m_fd.get(), &mine) != 0 || ::lstat(m_tmp.c_str(), &named) != 0 ||
      mine.st_dev != named.st_dev || mine.st_ino != named.st_ino) {
    m_fd.reset();
    return write_file_atomic(m_path, data, m_mode, durability);
  }
  m_fd.reset();
  if (::rename(m_tmp.c_str(), m_path.c_str()) != 0) {
    auto err = errno_error("rename " + m_tmp + " to " + m_path);
    ::unlink(m_tmp.c_str());
    return err;
  }
  if (!sync) {
    return ok_status();
  }
  auto slash = m_path.rfind('/');
  return fsync_dir(slash == std::string::npos ? "." : m_path.substr(0, slash == 0 ? 1 : slash));
}

Status write_file_atomic(const std::string& path, std::string_view data, int mode,
                         Durability durability) {
  auto file = AtomicFile::create(path, mode);
  if (!file) {
    return Error{file.error()};
  }
  return file->commit(data, durability);
}

Status private_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return errno_error("mkdir " + path);
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    return errno_error("open " + path + " (a private directory, not a link)");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return errno_error("stat " + path);
  }
  if (st.st_uid != ::geteuid()) {
    return Error{path + " belongs to uid " + std::to_string(st.st_uid) +
                 ", not to this user: not used for private files"};
  }
  if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0700) != 0) {
    return errno_error("chmod 0700 " + path);
  }
  return ok_status();
}

Status make_dirs(const std::string& path, int mode) {
  if (path.empty()) {
    return Error{"make_dirs: empty path"};
  }
  // The common case, a directory that exists, is one stat; parents are walked
  // only when something is missing (not one mkdir per component every time).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return Error{"mkdir " + path + ": exists and is not a directory"};
    }
    return ok_status();
  }
  if (errno != ENOENT) {
    return errno_error("stat " + path);
  }
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') {
    dir.pop_back();
  }
  if (size_t slash = dir.find_last_of('/'); slash != std::string::npos && slash > 0) {
    if (auto parent = make_dirs(dir.substr(0, slash), mode); !parent) {
      return parent;
    }
  }
  if (::mkdir(dir.c_str(), mode) == 0) {
    return ok_status();
  }
  if (errno != EEXIST) {
    return errno_error("mkdir " + dir);
  }
  if (::stat(dir.c_str(), &st) != 0) {  // made meanwhile by someone else: is it a directory?
    return errno_error("stat " + dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Error{"mkdir " + dir + ": exists and is not a directory"};
  }
  return ok_status();
}

std::string sibling_program(const std::string& name) {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    return {};
  }
  std::string dir(self, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  std::string path = dir + "/" + name;
  return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
}

}  // namespace util
