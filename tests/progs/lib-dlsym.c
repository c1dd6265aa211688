/* SPDX-License-Identifier: MIT */
/* lib-dlsym.c - a library that creates threads as jemalloc does, through
 * the pthread_create it looks up itself (tests/e2e/dlsym.sh): loaded after
 * libctrace, its RTLD_NEXT lookup would find libc's, past the wrapper. */
#include "lib-dlsym.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* Creates a thread running fn(arg) with the pthread_create that
 * dlsym(RTLD_NEXT or RTLD_DEFAULT, ...) gives this library. */
int lib_create(int next, pthread_t *th, void *(*fn)(void *), void *arg)
{
    create_fn create;
    *(void **)&create = dlsym(next ? RTLD_NEXT : RTLD_DEFAULT, "pthread_create");
    return create ? create(th, NULL, fn, arg) : -1;
}

/* Defined here only: RTLD_NEXT from here must not find it (the search
 * starts after this library), RTLD_DEFAULT must. */
int lib_dlsym_probe(void)
{
    return 42;
}

/* What other lookups answer, as this library asks them: printed by the
 * program, and compared untraced and traced. */
void lib_lookups(void)
{
    printf("next probe: %s\n", dlsym(RTLD_NEXT, "lib_dlsym_probe") ? "found" : "none");
    printf("default probe: %s\n", dlsym(RTLD_DEFAULT, "lib_dlsym_probe") ? "found" : "none");
    printf("next getpid is libc's: %s\n",
           dlsym(RTLD_NEXT, "getpid") ==
                   dlsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), "getpid")
               ? "yes"
               : "no");
    dlerror();
    printf("next nonexistent: %s\n",
           dlsym(RTLD_NEXT, "no_such_symbol_anywhere") ? "found" : "none");
    printf("dlerror set: %s\n", dlerror() ? "yes" : "no");
}
