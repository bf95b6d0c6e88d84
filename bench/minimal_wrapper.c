/* bench/minimal_wrapper.c: the least a durable wrapper can do, as a floor for `make bench`.
 *
 * usage: minimal_wrapper DIR COMMAND [ARG...]
 * Creates DIR/output.log, writes a header line, fsyncs the file, DIR and its parent
 * (what `gpualert run` promises before the job starts). Runs COMMAND with its stdout
 * on a pipe, copies the pipe to the log and to our stdout (read/write,
 * 256 KiB), starts writeback every 8 MiB, fdatasyncs at the end if the job printed
 * anything and exits with the job's code. No stderr, no signals, no diagnosis, no
 * report: a floor, not a tool. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void sync_dir(const char* path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: minimal_wrapper DIR COMMAND [ARG...]\n");
    return 2;
  }
  if (mkdir(argv[1], 0755) != 0) {
    perror("mkdir");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/output.log", argv[1]);
  int log = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (log < 0) {
    perror("open");
    return 2;
  }
  const char header[] = "# minimal wrapper\n";
  if (write(log, header, sizeof header - 1) < 0) {
    return 2;
  }
  fsync(log);
  sync_dir(argv[1]);
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", argv[1]);
  sync_dir(dirname(parent));

  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    return 2;
  }
  fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
  pid_t child = fork();
  if (child == 0) {
    dup2(p[1], STDOUT_FILENO);
    execvp(argv[2], argv + 2);
    _exit(127);
  }
  close(p[1]);
  static char buf[256 * 1024];
  long long total = 0, started = 0;
  for (;;) {
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n <= 0) {
      break;
    }
    if (write(log, buf, (size_t)n) != n || write(STDOUT_FILENO, buf, (size_t)n) != n) {
      break;
    }
    total += n;
    if (total - started >= (8 << 20)) {
      sync_file_range(log, started, total - started, SYNC_FILE_RANGE_WRITE);
      started = total;
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (total > 0) {
    fdatasync(log);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
