/* SPDX-License-Identifier: MIT */
/* stacks_nofp.h - code built without frame pointers, for test-stacks.c
 * (stacks_nofp.c says how it defeats a frame-pointer walk). */
#ifndef CTR_STACKS_NOFP_H
#define CTR_STACKS_NOFP_H

#include <pthread.h>
#include <stdint.h>

/* nofp_outer -> nofp_middle -> nofp_inner -> pthread_mutex_lock(mu), and
 * returns with mu held; @return a value computed around the calls (so none of them is
 * a tail call or folded away). */
int nofp_outer(pthread_mutex_t *mu, int x);

/* Calls fn(arg) with rbp pointing at `fake`, a made-up frame record
 * {next frame, return address}; keeps no frame pointer of its own, but its
 * .eh_frame describes it, so libunwind sees through it. x86-64 only. */
void fake_frame_call(void (*fn)(void *), void *arg, const uintptr_t *fake);

#endif
