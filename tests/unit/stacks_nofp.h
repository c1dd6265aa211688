/* SPDX-License-Identifier: MIT */
/* stacks_nofp.h - code built without frame pointers, for test-stacks.c
 * (stacks_nofp.c says how it defeats a frame-pointer walk). */
#ifndef CTR_STACKS_NOFP_H
#define CTR_STACKS_NOFP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* nofp_outer -> nofp_middle -> nofp_inner -> pthread_mutex_lock(mu), and
 * returns with mu held; @return a value computed around the calls (so none of them is
 * a tail call or folded away). */
int nofp_outer(pthread_mutex_t *mu, int x);

/* What nofp_start_routine is given: where to publish its thread's kernel
 * id, and the mutex to wait for. */
struct nofp_start {
    _Atomic pid_t tid;
    pthread_mutex_t *mu;
};

/* A thread's start routine (arg: a struct nofp_start) that waits for mu
 * itself, with no function of its own in between: its caller is glibc's
 * start_thread, which keeps no frame pointer either. Unlocks mu after. */
void *nofp_start_routine(void *arg);

/* Calls fn(arg) with rbp pointing at `fake`, a made-up frame record
 * {next frame, return address}; keeps no frame pointer of its own, but its
 * .eh_frame describes it, so libunwind sees through it. x86-64 only. */
void fake_frame_call(void (*fn)(void *), void *arg, const uintptr_t *fake);

#endif
