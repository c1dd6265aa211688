/* SPDX-License-Identifier: MIT */
/* interpose.c - how libctrace interposes: the wrappers of thread creation
 * and naming, and of the jumps out of signal handlers. The waits are in
 * interpose_sync.c, interpose_cond.c and interpose_io.c.
 *
 * The wrappers preempt libc's definitions (link order, or LD_PRELOAD) and
 * reach the real ones through ctr__real (core/real.c), whose entries start
 * out as resolvers so that a call made before our constructor (by another
 * library's) works.
 * When tracing is off a wrapper costs one load and a branch before jumping to
 * the real function. Traced paths live in CTR_WRAPPER_TEXT functions so that
 * stacks start at the caller's line. The waits for processes and signals
 * are in interpose_proc.c.
 */
#include "core/common.h"
#include "core/emit.h"
#include "core/hooks.h"
#include "core/intern.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace_format.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unistd.h>

/* Pulls this file in with core/real.c from the static library. */
const int ctr__wrappers_threads;

/* ---------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------- */

struct start_args {
    void *(*fn)(void *);
    int (*c11_fn)(void *); /* instead of fn, for thrd_create */
    void *arg;
    uint64_t id, parent_id; /* 0s: a thread the tracer's call-out creates */
};

/* Start arguments go from the creator to the new thread through this small
 * table, not through malloc: the new thread's free() would be its first call
 * into malloc, which gives a thread an arena of its own, 64 MiB of address
 * space that a program whose threads never allocate would not have paid
 * (its RLIMIT_AS). Beyond START_SLOTS creations in flight at once, malloc
 * serves. A slot is taken with an acquire CAS and given back by the new
 * thread with a release store once it has copied its arguments out, so the
 * copy comes before the next taker's writes. */
#define START_SLOTS 64
static struct start_slot {
    _Atomic int taken;
    struct start_args a;
} start_slots[START_SLOTS];

static struct start_args *start_args_new(struct start_args a)
{
    struct start_args *s = NULL;
    for (int i = 0; i < START_SLOTS && !s; i++) {
        int free_slot = 0;
        /* relaxed first look: skips taken slots without a bus lock.
         * acquire on the CAS: pairs with start_args_take's release. */
        if (!atomic_load_explicit(&start_slots[i].taken, memory_order_relaxed) &&
            atomic_compare_exchange_strong_explicit(&start_slots[i].taken, &free_slot, 1,
                                                    memory_order_acquire, memory_order_relaxed))
            s = &start_slots[i].a;
    }
    if (!s && !(s = malloc(sizeof(*s))))
        return NULL;
    *s = a;
    return s;
}

/* Copies the arguments out and lets their slot (or memory) go. */
static struct start_args start_args_take(struct start_args *p)
{
    struct start_args a = *p;
    uintptr_t at = (uintptr_t)p, first = (uintptr_t)&start_slots[0];
    if (at >= first && at < first + sizeof(start_slots)) {
        struct start_slot *slot = &start_slots[(at - first) / sizeof(start_slots[0])];
        /* release: the copy above before the next taker's writes. */
        atomic_store_explicit(&slot->taken, 0, memory_order_release);
    } else {
        free(p);
    }
    return a;
}

static void start_args_drop(struct start_args *p)
{
    (void)start_args_take(p); /* the thread never started */
}

/* The new thread's first step: registered, with ThreadStart naming its start
 * function `fn`. */
static void thread_started(const struct start_args *s, uintptr_t fn)
{
    /* If tracing stopped meanwhile, register lazily later (or never). */
    if (ctr__tracing()) {
        struct ctr_thread *t = ctr__thread_register(s->id, s->parent_id);
        if (t) {
            uint64_t args[2] = {s->parent_id, fn};
            ctr__emit_one(t, CTR_EV_THREAD_START, args);
        }
    }
}

static void *thread_trampoline(void *p)
{
    struct start_args s = start_args_take(p);
    thread_started(&s, (uintptr_t)s.fn);
    return s.fn(s.arg);
}

/* A C11 thread's, made by pthread_create. Its function is called as the
 * thread's start routine, as glibc's own start calls it: the int comes back
 * in the low half of the pointer, all that thrd_join reads of it (thrd_exit
 * passes its int the same way). So the call is a tail call, and this
 * frame, as thread_trampoline's, is not in the thread's stacks. */
static void *thread_trampoline_c11(void *p)
{
    struct start_args s = start_args_take(p);
    thread_started(&s, (uintptr_t)s.c11_fn);
    void *(*start)(void *) = (void *(*)(void *))(void (*)(void))s.c11_fn;
    return start(s.arg);
}

/* ThreadCreate(id, stack) by t, with the stack of pthread_create's caller. */
static CTR_WRAPPER_TEXT void note_create(struct ctr_thread *t, uint64_t id)
{
    if (ctr__write_begin(t)) {
        uint64_t args[2] = {id, ctr__stack_here(t)};
        ctr__emit(t, CTR_EV_THREAD_CREATE, args);
        ctr__write_end(t);
    }
}

/* A thread the tracer's own call-out creates (LTTng-UST's listeners, started
 * as lttng.c loads the provider) is the tracer's: never traced. */
static void *untraced_trampoline(void *p)
{
    struct start_args a = start_args_take(p);
    ctr__self = &ctr__thread_off;
    return a.fn(a.arg);
}

static int create_untraced(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                           void *arg)
{
    struct start_args *a = start_args_new((struct start_args){.fn = fn, .arg = arg});
    if (!a)
        return ctr__real.pthread_create(th, attr, fn, arg);
    int rc = ctr__real.pthread_create(th, attr, untraced_trampoline, a);
    if (rc != 0)
        start_args_drop(a);
    return rc;
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                                               void *(*fn)(void *), void *arg)
{
    struct ctr_thread *self = ctr__self;
    if (self && self->internal) /* a call-out, or the "off" slot (internal 1) */
        return create_untraced(th, attr, fn, arg);
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return ctr__real.pthread_create(th, attr, fn, arg);
    struct start_args *s = start_args_new(
        (struct start_args){.fn = fn, .arg = arg, .id = ctr__thread_new_id(), .parent_id = t->id});
    if (!s)
        return ctr__real.pthread_create(th, attr, fn, arg); /* child registers lazily */
    /* Before the real call, so the child's ThreadStart is later in time. */
    note_create(t, s->id);
    int rc = ctr__real.pthread_create(th, attr, thread_trampoline, s);
    if (rc != 0)
        start_args_drop(s); /* the ThreadCreate stays, for a thread that never starts */
    return rc;
}

/* C11's thrd_create, recorded as pthread_create is (glibc's calls its
 * internal pthread_create, which the wrapper above never sees). Traced, it
 * is made by the real pthread_create with default attributes, as glibc's
 * own is, so that a sanitizer's pthread_create, which is the next
 * definition and knows no thrd_create, sees the thread start; the error
 * numbers map as glibc's thrd_create maps them. */
CTR_EXPORT CTR_WRAPPER_TEXT int thrd_create(thrd_t *th, thrd_start_t fn, void *arg)
{
    struct ctr_thread *self = ctr__self;
    struct ctr_thread *t = self && self->internal ? NULL : ctr__self_traced();
    if (!t)
        return ctr__real.thrd_create(th, fn, arg);
    struct start_args *s = start_args_new((struct start_args){
        .c11_fn = fn, .arg = arg, .id = ctr__thread_new_id(), .parent_id = t->id});
    if (!s)
        return ctr__real.thrd_create(th, fn, arg);
    note_create(t, s->id);
    int rc = ctr__real.pthread_create(th, NULL, thread_trampoline_c11, s);
    if (rc != 0)
        start_args_drop(s);
    return rc == 0 ? thrd_success : rc == ENOMEM ? thrd_nomem : thrd_error;
}

CTR_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    int rc = ctr__real.pthread_setname_np(th, name);
    struct ctr_thread *t = ctr__self_traced();
    if (rc != 0 || !t)
        return rc;
    uint64_t target;
    if (pthread_equal(th, pthread_self()))
        target = t->id;
    else if (!ctr__thread_find(th, &target))
        return rc;
    uint64_t args[2] = {target, ctr__intern(&ctr__strings, name, (uint32_t)strlen(name))};
    ctr__emit_one(t, CTR_EV_THREAD_NAME, args);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Jumps out of signal handlers
 *
 * A handler that siglongjmps (the classic way to time out a blocking read)
 * leaves the frames it interrupted without returning through them: a
 * wrapper inside its real call, whose open call mark would otherwise say
 * "still in read" for ever, or a write section, which would otherwise stay
 * open (the thread would never write again, and a stop would wait for it).
 * Before the jump, the target's stack pointer says which frames it leaves:
 * everything below it. glibc (x86_64) keeps it in the jmp_buf mangled with
 * the thread's pointer guard (PTR_MANGLE: xor with %fs:0x30, rotate left by
 * 17); anything else, or a target off the thread's stack (an alternate
 * signal stack), leaves the marks alone.
 * ------------------------------------------------------------------------- */

static uintptr_t jump_target_sp(const struct __jmp_buf_tag *env)
{
#if defined(__x86_64__) && defined(__GLIBC__)
    uintptr_t guard, v = (uintptr_t)env->__jmpbuf[6]; /* JB_RSP */
    __asm__("mov %%fs:0x30, %0" : "=r"(guard));
    return ((v >> 17) | (v << 47)) ^ guard;
#else
    (void)env;
    return 0;
#endif
}

static CTR_WRAPPER_TEXT void before_jump(const struct __jmp_buf_tag *env)
{
    struct ctr_thread *t = ctr__self;
    if (!t || t == &ctr__thread_off)
        return;
    uintptr_t sp = jump_target_sp(env);
    if (sp < t->stack_lo || sp >= t->stack_hi)
        return;
    /* relaxed: the owner's own field; the drop is a counter (count_drop,
     * thread.c); release: as in ctr__write_end. */
    if (atomic_load_explicit(&t->writing, memory_order_relaxed) && sp > t->section_frame) {
        /* The event being written is lost (an event is committed only once
         * whole, so the chunk stays consistent), and counted. */
        t->internal = 0;
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        atomic_store_explicit(&t->writing, 0, memory_order_release);
    }
    if (t->call_kind != CTR_CALL_NONE && sp > t->call_frame)
        ctr__call_jump(t);
}

/* glibc declares __longjmp_chk only to _FORTIFY_SOURCE builds; declared
 * here as it does, so that its wrapper below has a prototype as the other
 * jumps do (setjmp.h). */
CTR_EXPORT void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));

#define CTR_X_JUMP(name, params, args)           \
    CTR_EXPORT CTR_WRAPPER_TEXT void name params \
    {                                            \
        before_jump(env);                        \
        ctr__real.name args;                     \
        __builtin_unreachable();                 \
    }
CTR_WRAPPED_JUMP(CTR_X_JUMP)
#undef CTR_X_JUMP
