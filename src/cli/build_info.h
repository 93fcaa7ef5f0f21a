// Build identity of the `trinity` binary, defined in build_info.cpp, which cmake/build_info.cmake
// generates in the build directory at every build (rewritten only when it changes): the CMake
// project version, the git commit ("-dirty" with uncommitted changes to tracked files), compiler,
// build type, compile flags and the TRINITY_* options that matter (-march=native, sanitizers).
#pragma once

namespace trinity::build {

extern const char* const kVersion;    // "0.1.0"
extern const char* const kCommit;     // "6db7974ab12c", "6db7974ab12c-dirty" or "unknown"
extern const char* const kCompiler;   // "GNU 12.2.0"
extern const char* const kBuildType;  // "Release"
extern const char* const kFlags;      // CMAKE_CXX_FLAGS + the build type's flags
extern const char* const kOptions;    // "native=ON sanitize=OFF tsan=OFF werror=OFF"

}  // namespace trinity::build
