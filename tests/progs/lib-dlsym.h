/* SPDX-License-Identifier: MIT */
/* lib-dlsym.h - what lib-dlsym.c exports to prog-dlsym.c (tests/e2e/dlsym.sh). */
#ifndef CTR_LIB_DLSYM_H
#define CTR_LIB_DLSYM_H

#include <pthread.h>

/* Creates a thread running fn(arg) with the pthread_create that
 * dlsym(RTLD_NEXT if next, else RTLD_DEFAULT, ...) gives the library.
 * @return pthread_create's result, or -1 if the lookup found nothing. */
int lib_create(int next, pthread_t *th, void *(*fn)(void *), void *arg);

/* Looked up by name only (lib_lookups): @return 42. */
int lib_dlsym_probe(void);

/* Prints what the library's other dlsym lookups answer. */
void lib_lookups(void);

#endif
