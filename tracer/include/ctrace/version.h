/* SPDX-License-Identifier: MIT */
/* ctrace/version.h - the version of the ctrace headers, and of the ABI of the
 * libctrace they describe. Included by ctrace/trace.h.
 *
 * The top-level CMakeLists.txt reads the version from here: this file is
 * the only place it is written.
 *
 * CTRACE_VERSION_*: the release (semantic versioning: MINOR grows with new
 * features, PATCH with fixes). CTRACE_ABI_VERSION: the number in libctrace's
 * SONAME (libctrace.so.1). It changes only when a program built against an
 * older header could no longer run with the newer library; adding functions,
 * or fields at the end of the extensible structs (see "ABI" in trace.h),
 * does not change it.
 *
 * ctrace_version() and ctrace_version_string() (trace.h) give the library's
 * own figures, for comparing with the header's at run time.
 */
#ifndef CTRACE_VERSION_H
#define CTRACE_VERSION_H

#define CTRACE_VERSION_MAJOR 0
#define CTRACE_VERSION_MINOR 2
#define CTRACE_VERSION_PATCH 0

#define CTRACE_ABI_VERSION 1

/* (major << 16) | (minor << 8) | patch: ordered as the versions are. */
#define CTRACE_VERSION_NUMBER \
    ((CTRACE_VERSION_MAJOR << 16) | (CTRACE_VERSION_MINOR << 8) | CTRACE_VERSION_PATCH)

#define CTRACE_VERSION__STR(x) #x
#define CTRACE_VERSION__XSTR(x) CTRACE_VERSION__STR(x)
/* "MAJOR.MINOR.PATCH" */
#define CTRACE_VERSION_STRING                  \
    CTRACE_VERSION__XSTR(CTRACE_VERSION_MAJOR) \
    "." CTRACE_VERSION__XSTR(CTRACE_VERSION_MINOR) "." CTRACE_VERSION__XSTR(CTRACE_VERSION_PATCH)

#endif
