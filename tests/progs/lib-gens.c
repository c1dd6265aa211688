/* SPDX-License-Identifier: MIT */
/* lib-gens.c - a start routine in a shared object of its own, for
 * test-generations: a thread that starts here and never waits uses no stack
 * in this object, so only its start address asks for the object's mapping. */
#include <stddef.h>

void *ctr_test_idle_start(void *arg);

void *ctr_test_idle_start(void *arg)
{
    return arg;
}
