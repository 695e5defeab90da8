#include "actions/command.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "actions/test_util.h"

namespace gpucanary::actions {
namespace {

using ::testing::HasSubstr;

TEST(RunCommandTest, CapturesOutputExitCodeEnvironmentAndStdin) {
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "echo out:$GC_TEST_VAR; echo err >&2; read line; echo in:$line; exit 3"};
  spec.env = {{"GC_TEST_VAR", "hello world"}};
  spec.stdin_data = "from stdin\n";
  auto r = RunCommand(spec);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(r->stdout_text, "out:hello world\nin:from stdin\n");
  EXPECT_EQ(r->stderr_text, "err\n");
  EXPECT_EQ(r->Describe(), "exit 3");
}

TEST(RunCommandTest, LooksUpThePathAndInheritsTheEnvironment) {
  CommandSpec spec;
  spec.argv = {"sh", "-c", "test -n \"$PATH\" && echo ok"};
  auto r = RunCommand(spec);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->stdout_text, "ok\n");
}

TEST(RunCommandTest, ArgumentsAreNotShellWords) {
  CommandSpec spec;
  spec.argv = {"/bin/echo", "node-4; rm -rf /", "$(id)"};
  auto r = RunCommand(spec);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_text, "node-4; rm -rf / $(id)\n");
}

TEST(RunCommandTest, MissingProgramIsNotFound) {
  CommandSpec spec;
  spec.argv = {"/nonexistent/gpucanary-hook"};
  auto r = RunCommand(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.error().message(), HasSubstr("exec '/nonexistent/gpucanary-hook'"));
  EXPECT_FALSE(RunCommand(CommandSpec{}));
}

bool Gone(pid_t pid) {
  // Reaped by init (or a subreaper) soon after the kill: gone, or a zombie.
  for (int i = 0; i < 200; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    const std::string stat = test::ReadAll("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(RunCommandTest, TimeoutKillsTheWholeProcessGroup) {
  const auto dir = test::TempDir("timeout");
  const auto pid_file = dir / "sleeper.pid";
  CommandSpec spec;
  // A shell that ignores SIGTERM, with a background child: both must go.
  spec.argv = {"/bin/sh", "-c",
               "trap '' TERM; sleep 30 & echo $! > " + pid_file.string() + "; echo started; wait"};
  spec.timeout_s = 0.3;
  const auto start = std::chrono::steady_clock::now();
  auto r = RunCommand(spec);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(r->signal, SIGKILL);  // the shell ignored SIGTERM
  EXPECT_EQ(r->stdout_text, "started\n");
  EXPECT_THAT(r->Describe(), HasSubstr("timed out after"));
  EXPECT_LT(took, 5.0);
  const pid_t sleeper = std::stoi(test::ReadAll(pid_file));
  EXPECT_TRUE(Gone(sleeper)) << "background sleep " << sleeper << " survived";
}

TEST(RunCommandTest, OutputIsBounded) {
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x"};
  spec.max_output_bytes = 1000;
  auto r = RunCommand(spec);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->stdout_text, std::string(1000, 'x'));
  EXPECT_TRUE(r->output_truncated);
}

TEST(RunCommandTest, LargeStdinToAProgramThatDoesNotReadIt) {
  CommandSpec spec;
  spec.argv = {"/bin/true"};
  spec.stdin_data = std::string(1 << 20, 'j');  // over any pipe buffer
  spec.timeout_s = 5;
  auto r = RunCommand(spec);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->ok()) << r->Describe();
}

TEST(RunCommandTest, OurDescriptorsDoNotLeakIntoTheChild) {
  // A descriptor opened without O_CLOEXEC, as another thread might.
  const int fd = open("/dev/null", O_RDONLY);  // NOLINT(android-cloexec-open)
  ASSERT_GE(fd, 0);
  const int high = dup2(fd, 77);
  ASSERT_EQ(high, 77);
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "if [ -e /proc/self/fd/77 ]; then echo leaked; else echo clean; fi"};
  auto r = RunCommand(spec);
  close(77);
  close(fd);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_text, "clean\n");
}

TEST(RunCommandTest, ChildStartsInItsOwnProcessGroupWithNoBlockedSignals) {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &block, &old);
  // No shell in between: dash's own vfork blocks signals around its exec.
  CommandSpec status;
  status.argv = {"/bin/grep", "SigBlk", "/proc/self/status"};
  auto blocked = RunCommand(status);
  CommandSpec stat;
  stat.argv = {"/bin/cat", "/proc/self/stat"};  // "pid (comm) state ppid pgrp ..."
  auto group = RunCommand(stat);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(blocked) << blocked.error().ToString();
  EXPECT_EQ(blocked->stdout_text, "SigBlk:\t0000000000000000\n");
  ASSERT_TRUE(group) << group.error().ToString();
  const std::string& text = group->stdout_text;
  const std::string pid = text.substr(0, text.find(' '));
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string state, ppid, pgrp;
  rest >> state >> ppid >> pgrp;
  EXPECT_EQ(pgrp, pid);
  EXPECT_NE(pgrp, std::to_string(getpgrp()));
}

// Runs a command with 0, 1 and 2 closed (in a death-test child): the pipes
// then come back as 0, 1 and 2 and must not overwrite one another in the
// child.
bool RunsWithStandardDescriptorsClosed() {
  close(STDIN_FILENO);
  close(STDOUT_FILENO);
  close(STDERR_FILENO);
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "read x; echo \"out:$x\"; echo err >&2"};
  spec.stdin_data = "in\n";
  auto r = RunCommand(spec);
  return r && r->ok() && r->stdout_text == "out:in\n" && r->stderr_text == "err\n";
}

TEST(RunCommandDeathTest, WorksWhenTheCallerHasItsStandardDescriptorsClosed) {
  EXPECT_EXIT(std::_Exit(RunsWithStandardDescriptorsClosed() ? 0 : 1), ::testing::ExitedWithCode(0),
              "");
}

}  // namespace
}  // namespace gpucanary::actions
