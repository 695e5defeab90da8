#pragma once
// --ready-file for the long-running commands (serve, exporter): once they
// listen, they write their base URL where a script or test waits for it.

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "core/status.h"

namespace gpucanary::cli {

// Writes `url` and a newline to `path` through a temporary file renamed over
// it, so a reader that waits for the file never sees half of it. Errors:
// kIoError naming the path.
inline Status WriteReadyFile(const std::string& path, const std::string& url) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << url << "\n";
    if (!out.flush()) {
      return Status(StatusCode::kIoError, "--ready-file: cannot write " + tmp);
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) {
    return Status(StatusCode::kIoError,
                  "--ready-file: cannot rename " + tmp + " to " + path + ": " + error.message());
  }
  return Status::Ok();
}

}  // namespace gpucanary::cli
