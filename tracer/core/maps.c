/* SPDX-License-Identifier: MIT */
/* maps.c - lists the process's executable mappings (the main program and every
 * loaded shared object) with their load bias and GNU build-id, so that the
 * analyzer can symbolize raw PCs offline and check it has the right files.
 *
 * Runs in the collector, at a session's start and in a dump's thread, never
 * in a wrapper: dl_iterate_phdr takes the loader's lock, and reading
 * /proc/self/exe costs a syscall.
 */

#include "core/maps.h"

#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

/* What one pass of dl_iterate_phdr collects: no memory is allocated while
 * it runs (see ctr__maps_scan), so it fills buffers made before, and counts
 * what it could not keep. */
struct scan_buf {
    struct ctr_map_info *maps;
    size_t nmaps, cap_maps, need_maps;
    char *paths;
    size_t used_paths, cap_paths, need_paths;
};

/* Finds NT_GNU_BUILD_ID in the object's PT_NOTE segments, in memory. */
static void find_build_id(const struct dl_phdr_info *info, struct ctr_map_info *m)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            /* Notes and their padded name and desc are 4-aligned (ELF gABI). */
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)p;
            size_t name_sz = (n->n_namesz + 3) & ~3u, desc_sz = (n->n_descsz + 3) & ~3u;
            const uint8_t *name = p + sizeof(*n), *desc = name + name_sz;
            if (desc + desc_sz > end)
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                n->n_descsz <= sizeof(m->build_id)) {
                memcpy(m->build_id, desc, n->n_descsz);
                m->build_id_len = n->n_descsz;
                return;
            }
            p = desc + desc_sz;
        }
    }
}

static int collect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan_buf *b = arg;
    struct ctr_map_info m = {0};
    char exe[PATH_MAX];
    const char *path = info->dlpi_name;
    if (!path || !path[0]) {
        /* The main program has no name here. */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
            return 0;
        exe[n] = 0;
        path = exe;
    }
    if (strncmp(path, "linux-vdso", 10) == 0 || strncmp(path, "linux-gate", 10) == 0)
        return 0; /* no file behind it to symbolize from */
    find_build_id(info, &m);
    m.bias = info->dlpi_addr;
    /* The path is copied: the object may be unloaded once the loader's lock
     * is let go. */
    size_t len = strlen(path) + 1;
    b->need_paths += len;
    int kept = b->used_paths + len <= b->cap_paths;
    if (kept) {
        memcpy(b->paths + b->used_paths, path, len);
        m.path = b->paths + b->used_paths;
        b->used_paths += len;
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        m.start = info->dlpi_addr + ph->p_vaddr;
        m.limit = m.start + ph->p_memsz;
        m.file_offset = ph->p_offset;
        b->need_maps++;
        if (kept && b->nmaps < b->cap_maps)
            b->maps[b->nmaps++] = m;
    }
    return 0;
}

/* dl_iterate_phdr holds the loader's lock while it calls back, and a
 * thread that a CPU-sampling signal interrupted inside malloc may be waiting,
 * in its handler's unwinding (libunwind), for that lock while it holds a
 * malloc arena's: so nothing here allocates while the lock is held. Each pass
 * fills buffers made before it, and one that did not fit is made again with
 * what it counted (objects loaded meanwhile: a few passes at most). */
void ctr__maps_scan(void (*visit)(void *ctx, const struct ctr_map_info *m), void *ctx)
{
    size_t cap_maps = 64, cap_paths = 16384;
    for (int pass = 0; pass < 4; pass++) {
        struct scan_buf b = {.maps = malloc(cap_maps * sizeof(*b.maps)),
                             .cap_maps = cap_maps,
                             .paths = malloc(cap_paths),
                             .cap_paths = cap_paths};
        int whole = 0, oom = !b.maps || !b.paths;
        if (!oom) {
            dl_iterate_phdr(collect_object, &b);
            whole = b.need_maps <= b.nmaps && b.need_paths <= b.used_paths;
            if (whole)
                for (size_t i = 0; i < b.nmaps; i++)
                    visit(ctx, &b.maps[i]);
        }
        free(b.maps);
        free(b.paths);
        if (whole || oom)
            return;
        cap_maps = b.need_maps + 16;
        cap_paths = b.need_paths + 4096;
    }
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    /* dlpi_adds/subs exist when size covers them (glibc >= 2.4). */
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
        *(uint64_t *)arg = (uint64_t)info->dlpi_adds * 1000003u + info->dlpi_subs;
    return 1; /* the counters are the same in every entry: one is enough */
}

uint64_t ctr__maps_version(void)
{
    uint64_t v = 0;
    dl_iterate_phdr(count_cb, &v);
    return v;
}
