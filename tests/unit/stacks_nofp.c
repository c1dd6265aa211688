/* SPDX-License-Identifier: MIT */
/* stacks_nofp.c - code built with -fomit-frame-pointer for test-stacks.c.
 *
 * Three ways such code fools a frame-pointer walk: a chain of calls through
 * functions that keep no frame pointer (rbp then still holds the frame of an
 * outer caller: the walk skips them); a wait in a thread's start routine,
 * whose callers are the thread's root (a walk cannot step past it, and
 * libunwind finds only start_thread and clone3 beyond it); and, made certain
 * with a few instructions of assembly, a call made while rbp points at
 * something that looks like a frame record (a walk reads a frame that never
 * was). */
#include "stacks_nofp.h"

#include <unistd.h>

/* One value live across each call: the compiler keeps it in rbx and leaves
 * rbp alone, so rbp still holds the frame of the first caller that keeps
 * frame pointers, and a walk goes straight there, past these functions. */
static volatile int sink;

__attribute__((noinline)) static int nofp_inner(pthread_mutex_t *mu, int x)
{
    int a = sink + x;
    pthread_mutex_lock(mu); /* the caller unlocks: mu need not stay live */
    return a + sink;
}

__attribute__((noinline)) static int nofp_middle(pthread_mutex_t *mu, int x)
{
    int a = sink ^ x;
    int r = nofp_inner(mu, a + 1);
    return r + a;
}

__attribute__((noinline)) int nofp_outer(pthread_mutex_t *mu, int x)
{
    int a = sink | x;
    int r = nofp_middle(mu, a + 2);
    return r + a;
}

void *nofp_start_routine(void *arg)
{
    struct nofp_start *s = arg;
    atomic_store(&s->tid, gettid());
    pthread_mutex_lock(s->mu);
    pthread_mutex_unlock(s->mu);
    return NULL;
}

#if defined(__x86_64__)
/* fake_frame_call(fn, arg, fake): rdi, rsi, rdx. Saves rbp (the stack is
 * then 16-byte aligned for the call), aims it at the fake record, calls
 * fn(arg), restores rbp. */
__asm__(".text\n"
        ".globl fake_frame_call\n"
        ".type fake_frame_call, @function\n"
        "fake_frame_call:\n"
        "  .cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %rbp, 0\n"
        "  movq %rdx, %rbp\n"
        "  movq %rdi, %rax\n"
        "  movq %rsi, %rdi\n"
        "  callq *%rax\n"
        "  popq %rbp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %rbp\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size fake_frame_call, .-fake_frame_call\n");
#endif
