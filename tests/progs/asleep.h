/* SPDX-License-Identifier: MIT */
/* asleep.h - whether a thread sleeps in the kernel (state S in
 * /proc/PID/task/TID/stat): how the tests and their programs wait until a
 * thread is in its blocking call, instead of sleeping "long enough", which a
 * loaded machine can make too short. Plain C without cmocka, so that the
 * traced test programs (C and C++) include it too. */
#ifndef CTR_ASLEEP_H
#define CTR_ASLEEP_H

#include <stdio.h>
#include <string.h>

/* Whether thread tid of process pid is asleep now (0 if it cannot be read). */
static inline int ctr_test_is_asleep(int pid, int tid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(stat, 1, sizeof(stat) - 1, f) : 0;
    if (f)
        fclose(f);
    stat[len] = 0;
    const char *s = strrchr(stat, ')'); /* the name may hold spaces */
    return s && s[1] == ' ' && s[2] == 'S';
}

#endif
