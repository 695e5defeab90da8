// Integration: releases through the real binaries. `gpucanary release
// announce` posts to a `gpucanary serve` child, the release survives kill -9
// of the daemon, and `gpucanary release list` reads it back; exit codes and
// messages as a CI job sees them. Ports are the OS's; waits are on
// conditions.

#include "releases/release.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "net/tls_test_util.h"
#include "prometheus_process.h"

namespace {

namespace fs = std::filesystem;
using gpucanary::test::ChildProcess;
using gpucanary::test::ReadTextFile;
using gpucanary::test::WaitFor;

constexpr std::string_view kToken = "ci-token-7f3a";

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class ReleaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpucanary-release-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "token") << kToken << "\n";
    std::ofstream(dir_ / "serve.yaml") << "listen: 127.0.0.1:0\n"
                                          "storage:\n  path: data\n"
                                          "auth:\n  token_file: token\n";
  }
  void TearDown() override {
    serve_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts gpucanary serve and returns its URL ("" on failure).
  std::string StartServe(const std::string& log_name) {
    return StartServeChild(GPUCANARY_BIN, dir_, dir_ / "serve.yaml", log_name, serve_);
  }

  // Runs `gpucanary ARGS` through the shell (ARGS is shell syntax).
  RunResult Run(const std::string& args, const std::string& env = "") {
    const fs::path out = dir_ / "stdout";
    const fs::path err = dir_ / "stderr";
    const std::string cmd = env + " " + GPUCANARY_BIN + " " + args + " </dev/null >" +
                            out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadTextFile(out);
    r.err = ReadTextFile(err);
    return r;
  }

  // A read with the daemon's token (reads need one once it has tokens).
  std::string Get(const std::string& url) {
    gpucanary::net::FetchOptions o;
    o.headers.emplace_back("Authorization", "Bearer " + std::string(kToken));
    auto r = gpucanary::net::Fetch(url, o);
    if (!r) return "(no answer: " + r.error().message() + ")";
    return std::to_string(r->status) + " " + r->body;
  }

  fs::path dir_;
  std::unique_ptr<ChildProcess> serve_;
};

TEST_F(ReleaseTest, AnnouncedReleasesSurviveKillNine) {
  std::string url = StartServe("serve1.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve1.log");
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::string started = std::to_string(now - 60);

  RunResult r =
      Run("release announce --url " + url + " --id chat-2026.12.02-1 --started-at " + started +
              " --service chat-api --version 2026.12.02-1 --git-sha 9f1c2e7 "
              "--model llama-3-70b-instruct --checkpoint ckpt-18000 --quantization fp8 "
              "--cuda-version 12.4 --framework vllm --framework-version 0.6.3 "
              "--environment prod --target node-4 --target node-5 "
              "--selector '{Hostname=~\"node-[45]\"}' --previous chat-2026.11.28-2 "
              "--field ticket=OPS-1",
          "GPUCANARY_TOKEN=" + std::string(kToken));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // It names its GPUs, so the daemon's canary service started a canary for it.
  EXPECT_EQ(r.out,
            "{\"status\":\"success\",\"data\":{\"id\":\"chat-2026.12.02-1\",\"canary\":"
            "\"chat-2026.12.02-1\"}}\n");
  EXPECT_EQ(r.err, "");
  const std::string annotation =
      R"({"id":"chat-2026.12.02-1","service":"chat-api","version":"2026.12.02-1",)"
      R"("git_sha":"9f1c2e7","model":"llama-3-70b-instruct","checkpoint":"ckpt-18000",)"
      R"("quantization":"fp8","cuda_version":"12.4","framework":"vllm",)"
      R"("framework_version":"0.6.3","environment":"prod","previous":"chat-2026.11.28-2",)"
      R"("started_at":)" +
      started +
      R"(,"targets":["node-4","node-5"],"selector":"{Hostname=~\"node-[45]\"}","ticket":"OPS-1"})";
  EXPECT_EQ(Get(url + "/api/v1/releases/chat-2026.12.02-1"),
            "200 {\"status\":\"success\",\"data\":" + annotation + "}");

  // A second one from a file, with the token on the command line.
  std::ofstream(dir_ / "release.json")
      << "{\"id\": \"embed-7\",\n \"service\": \"embed\",\n \"started_at\": " << now - 30
      << ",\n \"owner\": {\"team\": \"ml-platform\"}}\n";
  r = Run("release announce --url " + url + " --token " + std::string(kToken) + " --file " +
          (dir_ / "release.json").string() + " --version 7");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // What the API shows now was committed; kill -9 must not lose it.
  ASSERT_EQ(kill(serve_->pid(), SIGKILL), 0);
  ASSERT_TRUE(WaitFor(10, [&] { return !serve_->Running(); }));
  url = StartServe("serve2.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve2.log");

  EXPECT_EQ(Get(url + "/api/v1/releases/chat-2026.12.02-1"),
            "200 {\"status\":\"success\",\"data\":" + annotation + "}");
  r = Run("release list --url " + url + " --token " + std::string(kToken));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, R"({"id":"embed-7","service":"embed","started_at":)" + std::to_string(now - 30) +
                       R"(,"owner":{"team":"ml-platform"},"version":"7"})"
                       "\n" +
                       annotation + "\n");
  r = Run("release list --url " + url + " --token " + std::string(kToken) +
          " --service chat-api --limit 1");
  EXPECT_EQ(r.out, annotation + "\n");

  // Both are on /metrics for a Prometheus that scrapes the daemon.
  const std::string metrics = Get(url + "/metrics");
  EXPECT_NE(metrics.find("gpucanary_release_info{id=\"chat-2026.12.02-1\",service=\"chat-api\","
                         "version=\"2026.12.02-1\",git_sha=\"9f1c2e7\","
                         "model=\"llama-3-70b-instruct\",checkpoint=\"ckpt-18000\","
                         "quantization=\"fp8\",cuda_version=\"12.4\",framework=\"vllm\","
                         "framework_version=\"0.6.3\",environment=\"prod\"} 1\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(
      metrics.find("gpucanary_release_info{id=\"embed-7\",service=\"embed\",version=\"7\"} 1\n"),
      std::string::npos);
  EXPECT_NE(metrics.find("gpucanary_release_started_timestamp_seconds{id=\"embed-7\"} " +
                         std::to_string(now - 30) + "\n"),
            std::string::npos);
}

TEST_F(ReleaseTest, AnnounceExitCodesAndMessages) {
  const std::string url = StartServe("serve.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve.log");
  const std::string token = " --token " + std::string(kToken);

  // No token: the daemon refuses, exit 1, its answer on stderr.
  RunResult r = Run("release announce --url " + url + " --id r1 --started-at 1764680000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "gpucanary release announce: HTTP 401: {\"status\":\"error\",\"errorType\":"
            "\"unauthorized\",\"error\":\"this endpoint needs Authorization: Bearer <token>\"}\n");

  EXPECT_EQ(
      Run("release announce --url " + url + token + " --id r1 --started-at 1764680000").exit_code,
      0);
  // The same again is fine; a different annotation under that id is a conflict.
  EXPECT_EQ(
      Run("release announce --url " + url + token + " --id r1 --started-at 1764680000").exit_code,
      0);
  r = Run("release announce --url " + url + token + " --id r1 --started-at 1764680001");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "gpucanary release announce: HTTP 409: {\"status\":\"error\",\"errorType\":"
            "\"conflict\",\"error\":\"release 'r1' exists with a different annotation\"}\n");

  // Bad input never leaves the machine: exit 3 (usage), nothing sent.
  r = Run("release announce --url " + url + token + " --id r2 --started-at 1764680000000");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "gpucanary release announce: field 'started_at': expected Unix seconds, got "
            "1764680000000 (milliseconds?)\n");
  r = Run("release announce --url " + url + token + " --id r2 --selector 'node-4'");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err.rfind("gpucanary release announce: field 'selector': bad selector: ", 0), 0U)
      << r.err;
  r = Run("release announce --url " + url + token + " --started-at 5");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "gpucanary release announce: --id is required (or an \"id\" in --file)\n");
  std::ofstream(dir_ / "bad.json") << "{\"id\": \"r3\",\n \"started_at\": 1764680000,,\n}";
  r = Run("release announce --url " + url + token + " --file " + (dir_ / "bad.json").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "gpucanary release announce: " + (dir_ / "bad.json").string() +
                       ":2:27: syntax error while parsing object key - unexpected ','; expected "
                       "string literal\n");
  r = Run("release announce --url ftp://x --id r4");
  EXPECT_EQ(r.exit_code, 3);
  r = Run("release announce --id r4");
  EXPECT_EQ(r.exit_code, 3);  // --url is required (CLI11's message)
  EXPECT_NE(r.err.find("--url is required"), std::string::npos) << r.err;

  // Nothing listens: exit 1 with the reason.
  r = Run("release announce --url http://127.0.0.1:1 --id r5 --retries 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "gpucanary release announce: POST http://127.0.0.1:1/api/v1/releases: connect: "
            "Connection refused; retrying in 1 s\n"
            "gpucanary release announce: POST http://127.0.0.1:1/api/v1/releases: connect: "
            "Connection refused\n");

  // Only r1 was stored.
  r = Run("release list --url " + url + token);
  EXPECT_EQ(r.out, "{\"id\":\"r1\",\"started_at\":1764680000}\n");
}

// A daemon serving HTTPS (tls_server_config): it says so, and the CLI
// reaches it with --ca-file; without the CA it exits 1 saying why.
TEST_F(ReleaseTest, AnnounceToAnHttpsDaemonWithItsCa) {
  const gpucanary::net::test::TestPki pki;
  std::ofstream(dir_ / "serve.yaml", std::ios::app)
      << "tls_server_config:\n  cert_file: " << pki.Crt("server")
      << "\n  key_file: " << pki.Key("server") << "\n";
  const std::string url = StartServe("serve.log");
  ASSERT_EQ(url.rfind("https://127.0.0.1:", 0), 0U) << url << ReadTextFile(dir_ / "serve.log");
  const std::string token = " --token " + std::string(kToken);
  RunResult r = Run("release announce --url " + url + token + " --ca-file " + pki.Crt("ca") +
                    " --id tls-1 --started-at 1764680000");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Run("release announce --url " + url + token + " --id tls-2 --started-at 1764680000" +
          " --retries 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("TLS handshake: certificate verify failed"), std::string::npos) << r.err;
  r = Run("release list --url " + url + token + " --ca-file " + pki.Crt("ca"));
  EXPECT_EQ(r.out, "{\"id\":\"tls-1\",\"started_at\":1764680000}\n") << r.err;
}

// The simulator writes the releases it rolls out as docs/contracts.md §5 JSONL; each
// line reads back and announces as is.
TEST_F(ReleaseTest, SimulatorReleasesReadAndAnnounce) {
  RunResult r =
      Run("sim --scenario " + std::string(GPUCANARY_SOURCE_DIR) +
          "/scenarios/power-brake.yaml --offline " + (dir_ / "sim").string() + " --duration 90");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto releases =
      gpucanary::releases::LoadReleasesJsonl((dir_ / "sim" / "releases.jsonl").string());
  ASSERT_TRUE(releases.has_value()) << releases.error().message();
  ASSERT_EQ(releases->size(), 2U);
  EXPECT_EQ((*releases)[0].id, "stable");
  EXPECT_EQ((*releases)[1].id, "fp8-kernel");
  EXPECT_EQ((*releases)[1].targets, (std::vector<std::string>{"node-4"}));

  const std::string url = StartServe("serve.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve.log");
  for (const auto& release : *releases) {
    std::ofstream(dir_ / "one.json") << release.annotation;
    r = Run("release announce --url " + url + " --file " + (dir_ / "one.json").string(),
            "GPUCANARY_TOKEN=" + std::string(kToken));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Get(url + "/api/v1/releases/" + release.id),
              "200 {\"status\":\"success\",\"data\":" + release.annotation + "}");
  }
}

// gpucanary correlate --url: the daemon correlates its own store with the
// releases announced to it.
TEST_F(ReleaseTest, CorrelateAsksTheDaemon) {
  using ::testing::HasSubstr;
  const std::string url = StartServe("serve.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve.log");
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::string env = "GPUCANARY_TOKEN=" + std::string(kToken);
  RunResult r = Run("release announce --url " + url + " --id r1 --started-at " +
                        std::to_string(now - 120) + " --target node-1",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = Run("correlate --url " + url + " --from " + std::to_string(now - 600), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json data = nlohmann::json::parse(r.out);
  EXPECT_TRUE(data["regressions"].empty()) << r.out;  // the store holds no telemetry
  ASSERT_EQ(data["releases"].size(), 1u) << r.out;
  EXPECT_EQ(data["releases"][0]["id"], "r1");

  // A read needs a token too once one is configured (docs/http-api.md).
  r = Run("correlate --url " + url);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("HTTP 401"));
  // Nobody listening: exit 1 with the client's reason.
  r = Run("correlate --url http://127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("gpucanary correlate: "));
  // A bad parameter: the daemon's 400 with its reason.
  r = Run("correlate --url " + url + " --from " + std::to_string(now) + " --to " +
              std::to_string(now - 60),
          env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("HTTP 400"));
  // Files and a daemon at once, or neither: usage errors.
  r = Run("correlate --url " + url + " --telemetry x.om", env);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("give it without --telemetry and --releases"));
  r = Run("correlate --from 1764680000");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("give --telemetry and --releases (files), --prometheus and "
                               "--releases, or --url (a running daemon)"));
  r = Run("correlate --url " + url + " --output text", env);
  EXPECT_EQ(r.exit_code, 3);
  r = Run("correlate --url not-a-url");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--url"));
}

}  // namespace
