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
 * directly. The tracer's own lookups (interpose.c, collector.c) call libc's
 * dlsym through ctr__dlsym_next, never through the stub.
 *
 * Only on x86_64 (elsewhere there is no stub, and such threads show as
 * described above). dlvsym is not interposed.
 */
#include "wrap/interpose.h"
#include "core/internal.h"

#include <dlfcn.h>
#include <link.h>

typedef void *(*dlsym_fn)(void *handle, const char *name);

/* A sanitizer's runtime looks its interceptors' real functions up with
 * dlsym while it starts, before it can run instrumented code: what the
 * stub calls is left uninstrumented, and calls libc only. */
#if defined(__clang__)
#define CTR_UNINSTRUMENTED __attribute__((disable_sanitizer_instrumentation))
#else
#define CTR_UNINSTRUMENTED \
    __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))
#endif

/* libc's dlsym (dlsym moved into libc proper in glibc 2.34, and kept its
 * old libdl version as well). Any thread that finds it unset resolves it
 * and stores the same value (relaxed: the value is all there is to it); the
 * stub reads it after ctr__dlsym_route made sure it is set. */
_Atomic(dlsym_fn) ctr__dlsym_next;

/* libc's dlsym, resolved on first use. */
static CTR_UNINSTRUMENTED dlsym_fn dlsym_next(void)
{
    /* relaxed (load and store): every thread resolves the same function, and
     * a code address publishes no data; a racing thread resolves it again. */
    dlsym_fn f = atomic_load_explicit(&ctr__dlsym_next, memory_order_relaxed);
    if (!f) {
        *(void **)&f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            *(void **)&f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        atomic_store_explicit(&ctr__dlsym_next, f, memory_order_relaxed);
    }
    return f;
}

void *ctr__dlsym_real(void *handle, const char *name)
{
    dlsym_fn f = dlsym_next();
    return f ? f(handle, name) : NULL;
}

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
    dlsym_fn next = dlsym_next();
    if (!next)
        return (struct route){NULL, 1}; /* no libc dlsym: nothing to find */
    if ((handle != RTLD_NEXT && handle != RTLD_DEFAULT) || !name || !is_pthread_create(name))
        return (struct route){NULL, 0};
    /* What our wrapper calls: the next one after libctrace, as
     * ctr__interpose_init finds it (asked here, not read from ctr__real:
     * that may not be filled yet, and filling it is instrumented code). */
    void *real = next(RTLD_NEXT, name);
    struct link_map *ours = object_of((const void *)dlsym_next);
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
