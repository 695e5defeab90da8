# Writes OUTPUT, a C++ source that defines gpucanary::dashboard::Assets()
# (dashboard/dashboard.h) over FILES ('|'-separated paths): each file's bytes,
# its URL path ("/" for index.html, "/assets/<name>" otherwise), its content
# type from the extension, and a strong ETag, the first 80 bits of the
# bytes' SHA-256. Run at build time by src/dashboard/CMakeLists.txt:
#   cmake -DOUTPUT=assets.cc "-DFILES=a.html|b.js" -P embed_assets.cmake
string(REPLACE "|" ";" files "${FILES}")
set(arrays "")
set(entries "")
set(i 0)
foreach(file IN LISTS files)
  get_filename_component(name "${file}" NAME)
  if(name STREQUAL "index.html")
    set(path "/")
  else()
    set(path "/assets/${name}")
  endif()
  if(name MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  elseif(name MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  elseif(name MATCHES "\\.css$")
    set(type "text/css; charset=utf-8")
  else()
    message(FATAL_ERROR "embed_assets: no content type for ${file}")
  endif()
  file(READ "${file}" hex HEX)
  if(hex STREQUAL "")
    message(FATAL_ERROR "embed_assets: ${file} is empty")
  endif()
  file(SHA256 "${file}" sha)
  string(SUBSTRING "${sha}" 0 20 tag)
  # 24 bytes a line, each as a char literal: '\x3c',
  string(REPEAT "[0-9a-f]" 48 line)
  string(REGEX REPLACE "(${line})" "\\1\n" hex "${hex}")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  string(APPEND arrays "// web/.../${name}\nconstexpr char kAsset${i}[] = {\n${bytes}\n};\n\n")
  string(APPEND entries
    "      {\"${path}\", \"${type}\", R\"(\"${tag}\")\", {kAsset${i}, sizeof kAsset${i}}},\n")
  math(EXPR i "${i} + 1")
endforeach()

file(WRITE "${OUTPUT}" "// Generated at build time by src/dashboard/embed_assets.cmake. Do not edit.
#include \"dashboard/dashboard.h\"

namespace gpucanary::dashboard {
namespace {

${arrays}}  // namespace

std::span<const Asset> Assets() {
  static constexpr Asset kAssets[] = {
${entries}  };
  return kAssets;
}

}  // namespace gpucanary::dashboard
")
