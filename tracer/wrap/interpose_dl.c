/* SPDX-License-Identifier: MIT */
/* interpose_dl.c - libctrace's dlsym: threads that a library creates through
 * the pthread_create it looked up itself (jemalloc's background threads:
 * dlsym(RTLD_NEXT, "pthread_create")) are traced like any other.
 *
 * A library loaded after libctrace that asks for the *next* pthread_create
 * gets libc's, past our wrapper, and its threads would be seen only at
 * their first wait, as threads "running at trace start" with no start
 * routine. So dlsym answers a lookup of "pthread_create" (RTLD_NEXT or
 * RTLD_DEFAULT) whose answer would be the function our wrapper calls
 * (ctr__real.pthread_create) with the wrapper itself, which creates the
 * same thread, traced. A lookup that would find anything else (another
 * object's pthread_create, a sanitizer's interceptor, nothing) is left
 * alone, and so is a lookup in a given library's handle.
 *
 * Every other lookup must get exactly the answer it gets without us, and
 * glibc's dlsym answers RTLD_NEXT relative to the object it is called from,
 * which it finds from its return address. So dlsym is a small assembly stub
 * that asks route() whether the lookup is the one we answer, and otherwise
 * jumps (not calls) to libc's dlsym with the stack as it found it: libc's
 * dlsym sees the caller's own return address, and answers as if called
 * directly. The tracer's own lookups (core/real.c, collect/) call libc's
 * dlsym through ctr__dlsym_real (core/real.c), never through the stub.
 *
 * Only on x86_64 (elsewhere there is no stub, and such threads show as
 * described above). dlvsym is not interposed.
 */
#include "core/real.h"

#include <dlfcn.h>
#include <link.h>

/* Pulls this file out of the static library with the table of real
 * functions (core/real.c), as the wrapper files are. */
const int ctr__wrappers_dl;

#if defined(__x86_64__) && defined(__GLIBC__)

/* What the stub does with a lookup: `decided` says the answer is `answer`;
 * otherwise it goes to libc's dlsym unchanged. Returned in rax:rdx. */
struct route {
    void *answer;
    uintptr_t decided;
};

/* The loaded object that holds address a, or NULL. */
static CTR_UNINSTRUMENTED struct link_map *object_of(const void *a)
{
    Dl_info info;
    struct link_map *lm = NULL;
    return dladdr1(a, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm ? lm : NULL;
}

/* Whether `later` comes after `first` in the list of loaded objects (the
 * order of the global search, for the objects loaded at start-up). */
static CTR_UNINSTRUMENTED int comes_after(const struct link_map *first,
                                          const struct link_map *later)
{
    for (const struct link_map *m = first ? first->l_next : NULL; m; m = m->l_next)
        if (m == later)
            return 1;
    return 0;
}

struct route ctr__dlsym_route(void *handle, const char *name, const void *caller);

/* Whether name is "pthread_create" (strcmp is a sanitizer's too). */
static CTR_UNINSTRUMENTED int is_pthread_create(const char *name)
{
    static const char want[] = "pthread_create";
    for (size_t i = 0; i < sizeof(want); i++)
        if (name[i] != want[i])
            return 0;
    return 1;
}

CTR_UNINSTRUMENTED struct route ctr__dlsym_route(void *handle, const char *name, const void *caller)
{
    ctr_dlsym_fn next = ctr__dlsym_libc();
    if (!next)
        return (struct route){NULL, 1}; /* no libc dlsym: nothing to find */
    if ((handle != RTLD_NEXT && handle != RTLD_DEFAULT) || !name || !is_pthread_create(name))
        return (struct route){NULL, 0};
    /* What our wrapper calls: the next one after libctrace, as
     * ctr__real_init finds it (asked here, not read from ctr__real:
     * that may not be filled yet, and filling it is instrumented code). */
    void *real = next(RTLD_NEXT, name);
    struct link_map *ours = object_of((const void *)ctr__dlsym_libc);
    struct link_map *from = object_of(caller);
    if (!ours || !from || from == ours)
        return (struct route){NULL, 0};
    if (handle == RTLD_DEFAULT) {
        /* The first definition of all, whoever asks: ours if it is seen
         * (preloaded), else the one our wrapper calls. */
        if (next(RTLD_DEFAULT, name) == real)
            return (struct route){(void *)pthread_create, 1};
        return (struct route){NULL, 0};
    }
    /* RTLD_NEXT: the caller's answer is the first definition after the
     * caller. When the caller comes after us and the function our wrapper
     * calls comes after the caller, that is the one it finds (jemalloc,
     * loaded after a preloaded libctrace, finding libc's). A caller before
     * us (a sanitizer's runtime, the program when libctrace is preloaded)
     * finds our wrapper or what it should without our help. */
    struct link_map *target = object_of(real);
    if (target && comes_after(ours, from) && comes_after(from, target))
        return (struct route){(void *)pthread_create, 1};
    return (struct route){NULL, 0};
}

__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        ".cfi_startproc\n"
        "    mov (%rsp), %rdx\n" /* the caller's return address: its object */
        "    push %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    push %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    sub $8, %rsp\n" /* the call below needs a 16-byte aligned stack */
        ".cfi_adjust_cfa_offset 8\n"
        "    call ctr__dlsym_route\n"
        "    add $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    test %rdx, %rdx\n"
        "    jnz 1f\n"
        /* The caller's return address is on top again: libc's dlsym sees
         * it as its own. */
        "    jmp *ctr__dlsym_next(%rip)\n"
        "1:  ret\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n");

#endif
