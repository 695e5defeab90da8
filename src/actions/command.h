#pragma once
// Running one external program for a command hook: argv executed directly
// (no shell), in a process group of its own, with a deadline after which the
// whole group is killed, stdout and stderr captured up to a bound, an
// optional stdin payload, and no descriptor of ours leaking into it.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace gpucanary::actions {

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  // Added to (or replacing in) the inherited environment.
  std::vector<std::pair<std::string, std::string>> env;
  std::string stdin_data;  // written to the child's stdin, which is then closed
  double timeout_s = 60.0;
  std::size_t max_output_bytes = 64 << 10;  // per stream; the rest is read and dropped
};

struct CommandResult {
  bool timed_out = false;  // the deadline passed; the process group was killed
  int exit_code = -1;      // when it exited; -1 otherwise
  int signal = 0;          // when a signal ended it (SIGKILL after a timeout)
  std::string stdout_text;
  std::string stderr_text;
  bool output_truncated = false;  // a stream went over max_output_bytes
  double duration_s = 0.0;

  bool ok() const { return !timed_out && exit_code == 0; }
  // "exit 0", "exit 2", "killed by signal 9", "timed out after 2 s (process group killed)".
  std::string Describe() const;
};

// Runs `spec` and waits for it. On timeout the process group gets SIGTERM,
// then SIGKILL 1 s later if still alive. Once the program itself has exited,
// output still arriving from children it left behind is read for at most
// 200 ms. Errors (the program did not run): kInvalidArgument (empty argv),
// kNotFound ("exec 'x': No such file or directory"), kIoError (pipes,
// spawn). A program that runs and fails is a CommandResult, not an error.
// Thread-safe: concurrent calls run concurrent children.
Result<CommandResult> RunCommand(const CommandSpec& spec);

}  // namespace gpucanary::actions
