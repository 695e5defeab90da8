// Fuzz target for the CSV importers (nvidia-smi logs and DCGM CSV traces):
// any bytes, imported with both error policies, must give a report or an
// error (never a crash, hang or sanitizer error), and whatever the importer
// writes must be a valid recording.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "expfmt/reader.h"
#include "importers/dcgm_csv_importer.h"
#include "importers/nvidia_smi_importer.h"
#include "recording/recording_writer.h"

namespace {

using gpucanary::importers::ImportOptions;

// A path naming `bytes`, backed by memory (no disk I/O per input).
class MemFile {
 public:
  MemFile(const std::uint8_t* data, std::size_t size, const char* name) {
    fd_ = memfd_create(name, 0);
    if (fd_ < 0 || write(fd_, data, size) != static_cast<ssize_t>(size)) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

template <typename ImportFn>
void ImportAndCheck(ImportFn import, const std::string& input, bool skip_bad_lines) {
  MemFile out(nullptr, 0, "out");
  // Write to the memfd through its /proc path (an existing file is truncated).
  auto w = gpucanary::recording::RecordingWriter::Open(out.path());
  if (!w) return;
  ImportOptions options;
  options.hostname = "fuzz";
  options.skip_bad_lines = skip_bad_lines;
  auto report = import(input, options, **w);
  if (!(*w)->Close().ok() || !report) return;
  gpucanary::expfmt::ReadOptions read;
  read.format = gpucanary::expfmt::Format::kOpenMetrics;
  auto check = gpucanary::expfmt::ReadFile(out.path(), read);
  if (!check || !check->ok()) std::abort();  // the importer wrote an invalid recording
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemFile in(data, size, "in");
  for (bool skip : {false, true}) {
    ImportAndCheck(gpucanary::importers::ImportNvidiaSmiCsv, in.path(), skip);
    ImportAndCheck(gpucanary::importers::ImportDcgmCsv, in.path(), skip);
  }
  return 0;
}
