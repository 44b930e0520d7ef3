/* The version of these headers. CMake checks at configure time that it equals project(VERSION)
 * (CMakeLists.txt): change both together. zs_version() says which library is actually loaded. */
#ifndef ZSHARD_VERSION_H
#define ZSHARD_VERSION_H

#define ZSHARD_VERSION_MAJOR 0
#define ZSHARD_VERSION_MINOR 1
#define ZSHARD_VERSION_PATCH 0
#define ZSHARD_VERSION_STRING "0.1.0"

#endif
