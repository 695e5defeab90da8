#pragma once
// Test helper: a real Prometheus (Debian's /usr/bin/prometheus, 2.42) as a
// child process on a loopback port picked free, with its own data directory,
// ready when Start returns; stopped (SIGTERM, then SIGKILL) when destroyed.
// Waits poll conditions, never sleep a fixed time. Test code only.

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"

namespace gpucanary::test {

inline constexpr const char* kPrometheusBinary = "/usr/bin/prometheus";

// Polls `done` every 50 ms until it holds or `seconds` pass.
inline bool WaitFor(double seconds, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// A port free right now (bound, read, released): Prometheus cannot report
// the port it chose for :0.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

inline std::string ReadTextFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A child process started with posix_spawn (not fork: the test may already
// run server threads, and a forked child of a threaded process may only call
// async-signal-safe functions before exec), its stdout and stderr to `log`.
// Stopped (SIGTERM, then SIGKILL after 10 s) when this goes away.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& log) {
    Spawn(argv, log);
  }
  ~ChildProcess() { Stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  void Spawn(const std::vector<std::string>& argv, const std::filesystem::path& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }

  // True while the process runs.
  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    if (WaitFor(10, [&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; })) {
      pid_ = -1;
      return;
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Starts `binary serve --config CONFIG --ready-file DIR/url.txt` (output in
// DIR/LOG_NAME) into `child` and returns the daemon's URL once it is ready;
// "" when it exited or was not ready within 30 s.
inline std::string StartServeChild(const std::string& binary, const std::filesystem::path& dir,
                                   const std::filesystem::path& config, const std::string& log_name,
                                   std::unique_ptr<ChildProcess>& child) {
  std::filesystem::remove(dir / "url.txt");
  child = std::make_unique<ChildProcess>(
      std::vector<std::string>{binary, "serve", "--config", config.string(), "--ready-file",
                               (dir / "url.txt").string()},
      dir / log_name);
  if (!WaitFor(30, [&] { return std::filesystem::exists(dir / "url.txt") || !child->Running(); })) {
    return "";
  }
  std::string url = ReadTextFile(dir / "url.txt");
  while (!url.empty() && url.back() == '\n') url.pop_back();
  return url;
}

class PrometheusProcess {
 public:
  // Writes `config_yaml` and starts Prometheus with it plus `flags`, then
  // waits (up to 30 s) for /-/ready. On failure returns null and sets *error
  // (with Prometheus's log).
  static std::unique_ptr<PrometheusProcess> Start(const std::string& config_yaml,
                                                  const std::vector<std::string>& flags,
                                                  std::string* error) {
    return Start([&](int) { return config_yaml; }, flags, error);
  }

  // The same, with the configuration made for the port Prometheus will
  // listen on (to scrape itself).
  // `prepare_data` (optional) runs on the empty data directory before
  // Prometheus starts: to backfill blocks with promtool, say.
  static std::unique_ptr<PrometheusProcess> Start(
      const std::function<std::string(int port)>& config_for_port,
      const std::vector<std::string>& flags, std::string* error,
      const std::function<bool(const std::filesystem::path& data_dir)>& prepare_data = {}) {
    namespace fs = std::filesystem;
    if (!fs::exists(kPrometheusBinary)) {
      *error = std::string(kPrometheusBinary) +
               " is missing: scripts/install-deps.sh installs Debian's prometheus";
      return nullptr;
    }
    std::unique_ptr<PrometheusProcess> p(new PrometheusProcess());
    p->dir_ = fs::temp_directory_path() /
              ("gpucanary-prom-" + std::to_string(getpid()) + "-" +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(p->dir_);
    p->port_ = FreePort();
    std::ofstream(p->dir_ / "prometheus.yml") << config_for_port(p->port_);
    if (prepare_data && !prepare_data(p->dir_ / "data")) {
      *error = "preparing the data directory failed";
      return nullptr;
    }
    std::vector<std::string> argv = {kPrometheusBinary,
                                     "--config.file=" + (p->dir_ / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (p->dir_ / "data").string(),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(p->port_)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    p->argv_ = argv;
    if (!p->SpawnAndWait()) {
      *error = "prometheus did not become ready:\n" + p->Log();
      return nullptr;
    }
    return p;
  }

  // Starts the same Prometheus again after Stop (same port, data, flags);
  // false when it did not become ready (its log says why).
  bool StartAgain() { return SpawnAndWait(); }

  ~PrometheusProcess() {
    Stop();
    if (!keep_dir_) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  std::string Log() const { return ReadTextFile(dir_ / "prometheus.log"); }
  // Keep the data directory and log after the test (for a failing test).
  void KeepDir() { keep_dir_ = true; }
  const std::filesystem::path& dir() const { return dir_; }

  bool Running() { return child_.Running(); }
  void Stop() { child_.Stop(); }

 private:
  PrometheusProcess() = default;

  bool SpawnAndWait() {
    child_.Spawn(argv_, dir_ / "prometheus.log");
    const bool ready = WaitFor(30, [&] {
      if (!Running()) return true;
      Result<net::HttpResponse> r = net::Fetch(url() + "/-/ready");
      return r.has_value() && r->status == 200;
    });
    return ready && Running();
  }

  std::filesystem::path dir_;
  int port_ = 0;
  ChildProcess child_;
  std::vector<std::string> argv_;
  bool keep_dir_ = false;
};

}  // namespace gpucanary::test
