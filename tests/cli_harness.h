#pragma once
// Running the real gpucanary binary in a test: one fresh folder per test,
// the command through the shell with its standard streams in files, and
// what it printed and returned. Used by the CLI tests (cli_test,
// changepoints_cli_test); GPUCANARY_BIN is the binary's path.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpucanary::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fixture with a folder of its own (named after `prefix`, the process and
// the test) and Run().
class CliHarness : public ::testing::Test {
 protected:
  explicit CliHarness(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + "-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `gpucanary ARGS` through the shell (ARGS is shell syntax), with
  // `stdin_text` on its standard input.
  RunResult Run(const std::string& args, const std::string& stdin_text = "") {
    const std::filesystem::path in = dir_ / "stdin";
    const std::filesystem::path out = dir_ / "stdout";
    const std::filesystem::path err = dir_ / "stderr";
    std::ofstream(in, std::ios::binary) << stdin_text;
    const std::string cmd = std::string(GPUCANARY_BIN) + " " + args + " <" + in.string() + " >" +
                            out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace gpucanary::testing
