/* SPDX-License-Identifier: MIT */
/* vmsize.h - the calling process's address space as the kernel counts it
 * against RLIMIT_AS (VmSize in /proc/self/status): how the tests and their
 * programs see the tracer's share of it. Plain C without cmocka, like
 * asleep.h, so that traced test programs include it too. */
#ifndef CTR_VMSIZE_H
#define CTR_VMSIZE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VmSize in KiB, or -1 when it cannot be read. */
static inline long ctr_test_vm_size_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmSize:", 7))
            kib = atol(line + 7);
    if (f)
        fclose(f);
    return kib;
}

#endif
