/* SPDX-License-Identifier: MIT */
/* cpu-trace-gen.c - writes the synthetic CPU-sampled trace of cputrace.h
 * for the CLI's tests (tests/e2e/cpu.sh).
 * usage: cpu-trace-gen OUT perf|timer|none [LOST]
 * Exit status: 0, 1 when the trace cannot be written, 2 on a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cputrace.h"

int main(int argc, char **argv)
{
    static const char *const sources[] = {"none", "perf", "timer"};
    int source = -1;
    for (int i = 0; argc >= 3 && i < 3; i++)
        if (strcmp(argv[2], sources[i]) == 0)
            source = i;
    if (argc < 3 || argc > 4 || source < 0) {
        fprintf(stderr, "usage: cpu-trace-gen OUT perf|timer|none [LOST]\n");
        return 2;
    }
    uint64_t lost = argc == 4 ? strtoull(argv[3], NULL, 10) : 0;
    if (cpu_trace_write(argv[1], (enum cpu_trace_source)source, lost) != 0) {
        fprintf(stderr, "cpu-trace-gen: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    return 0;
}
