# Stands in for llama.cpp's own CMakeLists.txt in the engine build's throwaway source copy (server/setup/engine-build.ts,
# "addon" strategy; the original is kept beside it as CMakeLists.source.txt). node-llama-cpp's CMakeLists adds the
# llama.cpp directory and links its addon to the targets defined here; they are the libraries of the prebuilt
# @node-llama-cpp/<platform>-<arch> package, built from the same llama.cpp release as these sources, with these sources'
# headers. So only the addon (and whatever else the addon patch links, e.g. tools/mtmd) compiles.
# engine-build.ts copies the prebuilt libraries into the build tree first (GANTRY_PREBUILT_DIR), so the addon's RUNPATH
# is $ORIGIN and the build output holds the addon next to the libraries it loads.
cmake_minimum_required(VERSION 3.19)

if (NOT GANTRY_PREBUILT_LIBS OR NOT IS_DIRECTORY "${GANTRY_PREBUILT_DIR}" OR "${GANTRY_PREBUILT_RELEASE}" STREQUAL "")
    message(FATAL_ERROR "prebuilt-llama-cpp.cmake needs GANTRY_PREBUILT_LIBS=ON, GANTRY_PREBUILT_DIR and GANTRY_PREBUILT_RELEASE")
endif()

# The version variables llama.cpp's subprojects read (tools/mtmd sets its library VERSION from them).
file(STRINGS "${CMAKE_CURRENT_SOURCE_DIR}/CMakeLists.source.txt" _versions REGEX "^set\\(LLAMA_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(_line IN LISTS _versions)
    string(REGEX MATCH "^set\\((LLAMA_VERSION_[A-Z]+) ([0-9]+)\\)" _ "${_line}")
    set(${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
set(LLAMA_VERSION_BASE "${LLAMA_VERSION_MAJOR}.${LLAMA_VERSION_MINOR}.${LLAMA_VERSION_PATCH}")
set(LLAMA_VERSION "${LLAMA_VERSION_BASE}")

# As llama.cpp's own CMakeLists for a library build: shared libraries; no subprocess support (mtmd then builds without
# its ffmpeg video path).
option(BUILD_SHARED_LIBS "build shared libraries" ON)
set(LLAMA_SUBPROCESS OFF)
find_package(Threads REQUIRED)
include("${CMAKE_CURRENT_SOURCE_DIR}/cmake/common.cmake") # llama_add_compile_flags(), used by vendor/ and tools/

function(gantry_prebuilt_library name file)
    set(_path "${GANTRY_PREBUILT_DIR}/${CMAKE_SHARED_LIBRARY_PREFIX}${file}${CMAKE_SHARED_LIBRARY_SUFFIX}")
    if (NOT EXISTS "${_path}")
        message(FATAL_ERROR "prebuilt library missing: ${_path}")
    endif()
    add_library(gantry-prebuilt-${name} SHARED IMPORTED GLOBAL)
    set_target_properties(gantry-prebuilt-${name} PROPERTIES IMPORTED_LOCATION "${_path}")
endfunction()

gantry_prebuilt_library(ggml-base "ggml-base")
gantry_prebuilt_library(ggml "ggml.${GANTRY_PREBUILT_RELEASE}")
gantry_prebuilt_library(llama "llama.${GANTRY_PREBUILT_RELEASE}")
gantry_prebuilt_library(llama-common "llama-common")

add_library(ggml-base INTERFACE)
target_link_libraries(ggml-base INTERFACE gantry-prebuilt-ggml-base)
target_include_directories(ggml-base INTERFACE "${CMAKE_CURRENT_SOURCE_DIR}/ggml/include")
# As ggml's CMakeLists exports them for a shared build with dynamically loaded backends (the prebuilt's).
target_compile_definitions(ggml-base INTERFACE GGML_SHARED GGML_BACKEND_SHARED GGML_BACKEND_DL)

add_library(ggml INTERFACE)
target_link_libraries(ggml INTERFACE gantry-prebuilt-ggml ggml-base)

# node-llama-cpp's CMakeLists adds a PUBLIC include directory to `llama`, which only a built target accepts: an empty
# static library stands in, and links the prebuilt libllama into whatever links it.
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/gantry-prebuilt-llama.c" "/* placeholder: libllama is prebuilt */\n")
add_library(llama STATIC "${CMAKE_CURRENT_BINARY_DIR}/gantry-prebuilt-llama.c")
target_link_libraries(llama PUBLIC gantry-prebuilt-llama ggml)
target_include_directories(llama PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/include")
target_compile_definitions(llama PUBLIC LLAMA_SHARED)
target_compile_features(llama PUBLIC cxx_std_17)

# llama.cpp's vendored header libraries (nlohmann json, stb, miniaudio, sheredom, hash); common's cpp-httplib is not
# needed, so LLAMA_BUILD_COMMON is off in this directory.
set(LLAMA_BUILD_COMMON OFF)
add_subdirectory(vendor)

add_library(llama-common INTERFACE)
target_link_libraries(llama-common INTERFACE gantry-prebuilt-llama-common llama vendor::nlohmann vendor::sheredom)
target_include_directories(llama-common INTERFACE "${CMAKE_CURRENT_SOURCE_DIR}/common")
