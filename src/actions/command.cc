#include "actions/command.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <optional>
#include <utility>

extern char** environ;  // NOLINT(readability-identifier-naming): POSIX's name

namespace gpucanary::actions {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr auto kKillGrace = std::chrono::seconds(1);
constexpr auto kDrainAfterExit = std::chrono::milliseconds(200);

// Closes a descriptor once.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

Status MakePipe(Pipe& p) {
  std::array<int, 2> fds{};
  // Close-on-exec on both ends: the child gets only the dup2()ed copies.
  if (pipe2(fds.data(), O_CLOEXEC) != 0) {
    return Error(StatusCode::kIoError, "pipe: " + ErrnoMessage(errno));
  }
  p.read = Fd(fds[0]);
  p.write = Fd(fds[1]);
  // A daemon started with 0, 1 or 2 closed would get them back from pipe2;
  // the child's dup2()s onto 0, 1, 2 would then overwrite one another.
  for (Fd* end : {&p.read, &p.write}) {
    if (end->get() > STDERR_FILENO) continue;
    const int moved = fcntl(end->get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    if (moved < 0) return Error(StatusCode::kIoError, "fcntl: " + ErrnoMessage(errno));
    *end = Fd(moved);
  }
  return Status::Ok();
}

// The inherited environment with `overrides` set.
std::vector<std::string> BuildEnv(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : overrides) vars[name] = value;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The spawn attributes and file actions, destroyed with it.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawnattr_init(&attr_);
    posix_spawn_file_actions_init(&actions_);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  // The child: its own process group (so a timeout kills everything it
  // started), an empty signal mask and default dispositions (the daemon
  // blocks SIGTERM in its threads and ignores SIGPIPE), the pipes as
  // 0, 1, 2 and no other descriptor of ours.
  Status Configure(int in, int out, int err) {
    sigset_t empty;
    sigemptyset(&empty);
    sigset_t defaults;
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    int rc = posix_spawnattr_setflags(
        &attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (rc == 0) rc = posix_spawnattr_setpgroup(&attr_, 0);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attr_, &empty);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr_, &defaults);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions_, in, STDIN_FILENO);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions_, out, STDOUT_FILENO);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions_, err, STDERR_FILENO);
    // Descriptors other threads opened without O_CLOEXEC must not leak in
    // (glibc 2.34+; ours are all close-on-exec anyway).
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions_, 3);
    if (rc != 0) return Error(StatusCode::kIoError, "posix_spawn setup: " + ErrnoMessage(rc));
    return Status::Ok();
  }

  const posix_spawnattr_t* attr() const { return &attr_; }
  const posix_spawn_file_actions_t* actions() const { return &actions_; }

 private:
  posix_spawnattr_t attr_{};
  posix_spawn_file_actions_t actions_{};
};

// Appends what `fd` has to `out` up to `limit`, dropping the rest. False
// at end of stream or error.
bool ReadSome(int fd, std::string& out, std::size_t limit, bool& truncated) {
  std::array<char, 16384> buf{};
  const ssize_t n = read(fd, buf.data(), buf.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  const auto got = static_cast<std::size_t>(n);
  const std::size_t room = out.size() < limit ? limit - out.size() : 0;
  out.append(buf.data(), std::min(room, got));
  if (got > room) truncated = true;
  return true;
}

// write(2) to a pipe whose reader is gone raises SIGPIPE, which kills a
// process that has not ignored it. Blocks it in this thread for the write
// and swallows the one it raised, so the caller sees EPIPE instead.
ssize_t WriteNoSigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  const ssize_t n = write(fd, data, size);
  const int saved_errno = errno;
  if (n < 0 && saved_errno == EPIPE && !was_pending) {
    const timespec zero{};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved_errno;
  return n;
}

int MillisUntil(SteadyClock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - SteadyClock::now());
  return static_cast<int>(std::clamp<std::int64_t>(ms.count(), 0, 1000));
}

struct Streams {
  Fd in, out, err;
};

// Feeds stdin and reads stdout/stderr until the child exits or `deadline`
// passes; fills `result` except exit status and timing. Returns whether the
// child was reaped (its wait status in *wstatus).
bool Pump(pid_t pid, const CommandSpec& spec, Streams& s, SteadyClock::time_point deadline,
          CommandResult& result, int* wstatus) {
  std::size_t written = 0;
  if (spec.stdin_data.empty()) s.in.Reset();
  std::optional<SteadyClock::time_point> exited_at;
  bool reaped = false;
  for (;;) {
    if (!reaped && waitpid(pid, wstatus, WNOHANG) == pid) {
      reaped = true;
      exited_at = SteadyClock::now();
    }
    const bool streams_open = s.out.get() >= 0 || s.err.get() >= 0;
    if (reaped && (!streams_open || SteadyClock::now() - *exited_at > kDrainAfterExit)) break;
    if (!reaped && SteadyClock::now() >= deadline) break;
    std::array<pollfd, 3> fds{};
    fds[0] = {s.in.get(), POLLOUT, 0};
    fds[1] = {s.out.get(), POLLIN, 0};
    fds[2] = {s.err.get(), POLLIN, 0};
    // Short waits: the child's exit is noticed by polling waitpid.
    const int wait_ms = std::min(reaped ? 20 : 10, MillisUntil(deadline));
    const int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if ((fds[0].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      const ssize_t w = WriteNoSigpipe(s.in.get(), spec.stdin_data.data() + written,
                                       spec.stdin_data.size() - written);
      if (w > 0) written += static_cast<std::size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = spec.stdin_data.size();
      if (written >= spec.stdin_data.size()) s.in.Reset();
    }
    if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
        !ReadSome(s.out.get(), result.stdout_text, spec.max_output_bytes,
                  result.output_truncated)) {
      s.out.Reset();
    }
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
        !ReadSome(s.err.get(), result.stderr_text, spec.max_output_bytes,
                  result.output_truncated)) {
      s.err.Reset();
    }
  }
  return reaped;
}

// SIGTERM to the group, SIGKILL after the grace period; reaps the child.
void KillGroup(pid_t pid, int* wstatus) {
  kill(-pid, SIGTERM);
  const auto give_up = SteadyClock::now() + kKillGrace;
  while (SteadyClock::now() < give_up) {
    if (waitpid(pid, wstatus, WNOHANG) == pid) {
      kill(-pid, SIGKILL);  // whatever else of the group is left
      return;
    }
    usleep(10000);
  }
  kill(-pid, SIGKILL);
  while (waitpid(pid, wstatus, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::string CommandResult::Describe() const {
  if (timed_out) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "timed out after %.3g s (process group killed)", duration_s);
    return buf;
  }
  if (signal != 0) return "killed by signal " + std::to_string(signal);
  return "exit " + std::to_string(exit_code);
}

Result<CommandResult> RunCommand(const CommandSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return Error(StatusCode::kInvalidArgument, "command: empty argv");
  }
  Pipe in, out, err;
  GC_RETURN_IF_ERROR(MakePipe(in));
  GC_RETURN_IF_ERROR(MakePipe(out));
  GC_RETURN_IF_ERROR(MakePipe(err));
  // Our ends never block: the pump loop polls them.
  fcntl(in.write.get(), F_SETFL, O_NONBLOCK);
  fcntl(out.read.get(), F_SETFL, O_NONBLOCK);
  fcntl(err.read.get(), F_SETFL, O_NONBLOCK);

  SpawnSetup setup;
  GC_RETURN_IF_ERROR(setup.Configure(in.read.get(), out.write.get(), err.write.get()));
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = BuildEnv(spec.env);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);

  const auto start = SteadyClock::now();
  pid_t pid = 0;
  const int rc =
      posix_spawnp(&pid, argv[0], setup.actions(), setup.attr(), argv.data(), envp.data());
  if (rc != 0) {
    return Error(rc == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                 "exec '" + spec.argv[0] + "': " + ErrnoMessage(rc));
  }
  // The child holds its copies; ours must close so EOF can arrive.
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();

  CommandResult result;
  Streams streams{std::move(in.write), std::move(out.read), std::move(err.read)};
  const auto deadline = start + std::chrono::duration_cast<SteadyClock::duration>(
                                    std::chrono::duration<double>(std::max(spec.timeout_s, 0.0)));
  int wstatus = 0;
  if (!Pump(pid, spec, streams, deadline, result, &wstatus)) {
    result.timed_out = true;
    KillGroup(pid, &wstatus);
  }
  result.duration_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.signal = WTERMSIG(wstatus);
  return result;
}

}  // namespace gpucanary::actions
