/* SPDX-License-Identifier: MIT */
/* ctrace_grow.h - growing an array as entries are decoded or collected, the
 * one way the analyzer and the collector do it (sizes come from what was
 * actually read or seen, never from a count in the input). */
#ifndef CTRACE_GROW_H
#define CTRACE_GROW_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Makes *arrp (a pointer to the array's pointer, of *cap elements of elem
 * bytes) hold at least `need` elements, doubling. @return 0 or -ENOMEM (the
 * array is then unchanged). */
static inline int ctr_grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
    void **arr = arrp;
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

/* ctr_grow_zeroed() : ctr_grow() for an array indexed by id whose length
 * is its capacity (*cap): the elements it adds, from the old *cap on, are
 * zeroed. @return 0 or -ENOMEM (the array is then unchanged). */
static inline int ctr_grow_zeroed(void *arrp, size_t *cap, size_t need, size_t elem)
{
    size_t old = *cap;
    if (ctr_grow(arrp, cap, need, elem) != 0)
        return -ENOMEM;
    if (*cap == old) /* nothing added; the array may still be NULL */
        return 0;
    memset((char *)*(void **)arrp + old * elem, 0, (*cap - old) * elem);
    return 0;
}

#endif
