/* wrapped_io.h - the blocking I/O calls libctrace wraps (see interpose.h for
 * the X-macro's columns; interpose_io.c for the wrappers). */
#ifndef CTR_WRAPPED_IO_H
#define CTR_WRAPPED_IO_H

#define CTR_WRAPPED_IO(X)

#endif
