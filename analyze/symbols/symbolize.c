/* SPDX-License-Identifier: MIT */
/* symbolize.c - maps PCs recorded in a trace to inline chains of (function,
 * file, line) with elfutils libdwfl/libdw.
 *
 * Invariants:
 * - Each distinct (path, bias) is one `struct dso`: its own Dwfl holding
 *   exactly one module, opened the first time a PC in one of its mappings is
 *   symbolized. One Dwfl per file means bogus or stale mapping tables
 *   (overlapping files) cannot confuse libdwfl's address lookup: we always
 *   know which module to ask.
 * - A file that cannot be used (missing, not ELF, build-id differs) is marked
 *   failed once, with one warning line, and never opened again.
 * - Every string handed out is an interned copy owned by the symbolizer;
 *   answers, including "unknown", are cached per PC.
 * - Input is untrusted: no PC, mapping or file may crash us; the worst outcome
 *   is "unknown" (return 0).
 * - A function has one name whether DWARF or a symbol table gives it: the
 *   form of symname.h, from a linkage name wherever there is one.
 * - A file:line comes only from a compile unit whose own ranges hold the PC.
 *
 * Sources, in order: DWARF (inline chain, file:line), then the symbol table
 * (the name alone: .symtab, else MiniDebugInfo's .gnu_debugdata, else
 * .dynsym; libdwfl picks). Separate debug info is found the standard
 * elfutils way (build-id under /usr/lib/debug, .gnu_debuglink, .dwo files,
 * and debuginfod if DEBUGINFOD_URLS is set). Not thread-safe: symbolizing
 * fills caches.
 */
#include "symbols/symbolize.h"

#include "read/idmap.h"
#include "symbols/symname.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHAIN_MAX 32  /* inline depth kept per PC; the outermost are cut */
#define SCOPES_MAX 32 /* scopes named in a qualified name; the outermost are cut */

struct cu_range { /* [lo, hi) in module addresses belongs to cu */
    Dwarf_Addr lo, hi, bias;
    Dwarf_Die *cu; /* owned by the Dwfl, stable while it lives */
};

struct dso {
    Dwfl *dwfl;
    Dwfl_Module *mod;
    struct cu_range *cus; /* built on first need, sorted by lo */
    size_t ncus;
    bool cus_built;
    struct dso *next; /* all dsos, for ctr_symbolizer_free() */
};

enum map_state { MAP_UNOPENED, MAP_OPEN, MAP_FAILED };

struct map {
    struct ctr_sym_mapping m; /* path and build_id point to our own copies */
    int index;                /* position in the caller's array */
    uint64_t max_limit;       /* max limit over maps[0..this], for overlaps */
    enum map_state state;
    struct dso *dso; /* set when MAP_OPEN; may be shared */
};

/* Open-addressing hash set of pointers; cap is a power of two, load <= 1/2. */
struct set {
    void **slot;
    size_t cap, len;
};

struct pc_entry { /* one cached answer; n == 0 means "no symbol" */
    uint64_t pc;
    int n;
    struct ctr_sym_frame frames[];
};

struct ctr_symbolizer {
    struct map *maps; /* sorted by start */
    size_t nmaps;
    struct dso *dsos;
    struct set pcs;  /* of struct pc_entry */
    struct set strs; /* of interned char arrays */
    char *warn;      /* NULL until the first warning */
    size_t warn_len;
};

/* ---------------------------------------------------------------------------
 * Owned containers: warnings, interned strings, the PC cache
 * ------------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void add_warning(struct ctr_symbolizer *s,
                                                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *w = n < 0 ? NULL : realloc(s->warn, s->warn_len + (size_t)n + 2);
    if (w == NULL)
        return; /* warnings are best-effort; losing one under OOM is fine */
    va_start(ap, fmt);
    vsnprintf(w + s->warn_len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->warn = w;
    s->warn_len += (size_t)n;
    s->warn[s->warn_len++] = '\n';
    s->warn[s->warn_len] = '\0';
}

/* Returns the slot of the entry equal to key, or the empty slot where it
 * belongs; NULL if the set had to grow and could not. */
static void **set_find(struct set *t, size_t hash, const void *key,
                       bool (*eq)(const void *entry, const void *key),
                       size_t (*hash_of)(const void *entry))
{
    if (2 * (t->len + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        void **slot = calloc(cap, sizeof *slot);
        if (slot == NULL)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (t->slot[i] == NULL)
                continue;
            size_t j = hash_of(t->slot[i]) & (cap - 1);
            while (slot[j] != NULL)
                j = (j + 1) & (cap - 1);
            slot[j] = t->slot[i];
        }
        free(t->slot);
        t->slot = slot;
        t->cap = cap;
    }
    size_t j = hash & (t->cap - 1);
    while (t->slot[j] != NULL && !eq(t->slot[j], key))
        j = (j + 1) & (t->cap - 1);
    return &t->slot[j];
}

static void set_free(struct set *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slot[i]);
    free(t->slot);
}

static size_t hash_str(const void *p)
{
    return (size_t)ctr_hash_bytes(p, strlen(p));
}

static bool eq_str(const void *entry, const void *key)
{
    return strcmp(entry, key) == 0;
}

static size_t hash_pc(uint64_t pc)
{
    return (size_t)((pc * 0x9e3779b97f4a7c15u) >> 17); /* Fibonacci hashing */
}

static size_t hash_pc_entry(const void *entry)
{
    return hash_pc(((const struct pc_entry *)entry)->pc);
}

static bool eq_pc(const void *entry, const void *key)
{
    return ((const struct pc_entry *)entry)->pc == *(const uint64_t *)key;
}

/* Returns the interned copy of str; NULL if str is NULL or memory ran out
 * (an unknown name is an acceptable answer under OOM). */
static const char *intern(struct ctr_symbolizer *s, const char *str)
{
    void **slot = str ? set_find(&s->strs, hash_str(str), str, eq_str, hash_str) : NULL;
    if (slot != NULL && *slot == NULL && (*slot = strdup(str)) != NULL)
        s->strs.len++;
    return slot ? *slot : NULL;
}

/* ---------------------------------------------------------------------------
 * Mappings and lazily opened files
 * ------------------------------------------------------------------------- */

static int cmp_start(const void *a, const void *b)
{
    uint64_t x = ((const struct map *)a)->m.start, y = ((const struct map *)b)->m.start;
    return x < y ? -1 : x > y;
}

static struct map *find_map(const struct ctr_symbolizer *s, uint64_t pc)
{
    size_t lo = 0, hi = s->nmaps; /* find the first map with start > pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].m.start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Walk back only while an earlier map could still reach pc; in a sane
     * (non-overlapping) table this looks at one map. */
    for (size_t i = lo; i-- > 0 && s->maps[i].max_limit > pc;)
        if (pc < s->maps[i].m.limit)
            return &s->maps[i];
    return NULL;
}

static const char *hex(const uint8_t *p, size_t n, char *buf, size_t size)
{
    size_t i = 0;
    for (; i < n && 2 * i + 2 < size; i++)
        snprintf(buf + 2 * i, 3, "%02x", p[i]);
    buf[2 * i] = '\0';
    return buf;
}

/* Reports the file of m into a fresh Dwfl, checks it is the recorded one and
 * returns it; NULL (after one warning) if it cannot be used. */
static struct dso *open_dso(struct ctr_symbolizer *s, const struct ctr_sym_mapping *m)
{
    static char *debuginfo_path = NULL; /* NULL: elfutils' default path */
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &debuginfo_path,
    };
    /* Only regular files: opening a FIFO or device named by a bogus trace
     * could block or never end. */
    struct stat st;
    int err = stat(m->path, &st) != 0 ? errno : 0;
    if (err != 0 || !S_ISREG(st.st_mode)) {
        add_warning(s, "%s: %s", m->path, err ? strerror(err) : "not a regular file");
        return NULL;
    }
    struct dso *d = calloc(1, sizeof *d);
    if (d == NULL || (d->dwfl = dwfl_begin(&callbacks)) == NULL) {
        add_warning(s, "%s: out of memory", m->path);
        free(d);
        return NULL;
    }
    dwfl_report_begin(d->dwfl);
    /* add_p_vaddr: the module lands at bias + p_vaddr, i.e. where the traced
     * process had it, for PIE executables and shared libraries alike. */
    d->mod = dwfl_report_elf(d->dwfl, m->path, m->path, -1, m->bias, true);
    dwfl_report_end(d->dwfl, NULL, NULL);
    const unsigned char *id;
    GElf_Addr vaddr;
    int n = d->mod ? dwfl_module_build_id(d->mod, &id, &vaddr) : 0;
    char want[130], have[130];
    if (d->mod == NULL) {
        add_warning(s, "%s: cannot open as ELF: %s", m->path, dwfl_errmsg(-1));
    } else if (m->build_id_len > 0 && (n <= 0 || (size_t)n != m->build_id_len ||
                                       memcmp(id, m->build_id, (size_t)n) != 0)) {
        add_warning(s, "%s: build-id mismatch (trace has %s, file has %s); not symbolized", m->path,
                    hex(m->build_id, m->build_id_len, want, sizeof want),
                    n > 0 ? hex(id, (size_t)n, have, sizeof have) : "none");
    } else {
        Dwarf_Addr bias;
        if (dwfl_module_getdwarf(d->mod, &bias) == NULL)
            add_warning(s, "%s: no debug info; function names only", m->path);
        d->next = s->dsos;
        s->dsos = d;
        return d;
    }
    dwfl_end(d->dwfl);
    free(d);
    return NULL;
}

static void open_map(struct ctr_symbolizer *s, struct map *m)
{
    /* Another mapping of the same file and bias (e.g. a second executable
     * segment) shares its dso, or its failure and warning. */
    for (size_t i = 0; i < s->nmaps; i++) {
        struct map *o = &s->maps[i];
        if (o->state != MAP_UNOPENED && o->m.bias == m->m.bias &&
            strcmp(o->m.path, m->m.path) == 0) {
            m->state = o->state, m->dso = o->dso;
            return;
        }
    }
    m->dso = open_dso(s, &m->m);
    m->state = m->dso ? MAP_OPEN : MAP_FAILED;
}

/* ---------------------------------------------------------------------------
 * DWARF lookups
 * ------------------------------------------------------------------------- */

static int cmp_lo(const void *a, const void *b)
{
    Dwarf_Addr x = ((const struct cu_range *)a)->lo, y = ((const struct cu_range *)b)->lo;
    return x < y ? -1 : x > y;
}

/* Returns the CU DIE whose ranges contain module address addr, or NULL.
 * libdw 0.188 finds CUs only through .debug_aranges, which clang does not
 * emit by default; then a table of every CU's own ranges stands in for it.
 * And libdwfl keeps only where each CU's run of aranges starts, so it
 * answers with the CU before a gap for an address in the gap (_start, or
 * code compiled without -g, between a unit's .text.startup and .text):
 * its answer counts only if the CU's own ranges hold addr. */
static Dwarf_Die *find_cu(struct dso *d, Dwarf_Addr addr, Dwarf_Addr *bias)
{
    Dwarf_Die *cu = dwfl_module_addrdie(d->mod, addr, bias);
    if (cu != NULL && dwarf_haspc(cu, addr - *bias) == 1)
        return cu;
    if (!d->cus_built) {
        d->cus_built = true;
        size_t cap = 0;
        Dwarf_Addr b, base, lo, hi;
        while ((cu = dwfl_module_nextcu(d->mod, cu, &b)) != NULL) {
            for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;) {
                if (d->ncus == cap) {
                    struct cu_range *r = realloc(d->cus, (cap = 2 * cap + 64) * sizeof *r);
                    if (r == NULL)
                        goto done; /* a partial table only misses some CUs */
                    d->cus = r;
                }
                if (lo < hi)
                    d->cus[d->ncus++] = (struct cu_range){lo + b, hi + b, b, cu};
            }
        }
    done:
        if (d->ncus > 0)
            qsort(d->cus, d->ncus, sizeof *d->cus, cmp_lo);
    }
    size_t lo = 0, hi = d->ncus; /* first range with lo > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->cus[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= d->cus[lo - 1].hi)
        return NULL;
    *bias = d->cus[lo - 1].bias;
    return d->cus[lo - 1].cu;
}

/* integrate: also look through DW_AT_abstract_origin / DW_AT_specification. */
static bool attr_udata(Dwarf_Die *die, unsigned int name, bool integrate, Dwarf_Word *out)
{
    Dwarf_Attribute mem;
    Dwarf_Attribute *a =
        integrate ? dwarf_attr_integrate(die, name, &mem) : dwarf_attr(die, name, &mem);
    return dwarf_formudata(a, out) == 0;
}

static int clamp_line(Dwarf_Word v)
{
    return v > INT32_MAX ? 0 : (int)v;
}

/* ---------------------------------------------------------------------------
 * Function names (symname.h's form, from DWARF or the symbol table)
 * ------------------------------------------------------------------------- */

/* Interns the shown name (symname.h) of a symbol-table or linkage name. */
static const char *intern_symname(struct ctr_symbolizer *s, const char *symbol)
{
    char *name = ctr_symname(symbol);
    const char *r = intern(s, name);
    free(name);
    return r;
}

/* Follows die's DW_AT_abstract_origin / DW_AT_specification chain (inlined
 * instances, out-of-line clones and member definitions) to the DIE that
 * carries its DW_AT_name, the declaration in its scope; false if none. */
static bool declaration(Dwarf_Die *die, Dwarf_Die *out)
{
    *out = *die;
    for (int hops = 0; hops < 16; hops++) { /* bounds a cycle in bogus DWARF */
        if (dwarf_hasattr(out, DW_AT_name))
            return true;
        Dwarf_Attribute mem, *a = dwarf_attr(out, DW_AT_abstract_origin, &mem);
        if (a == NULL)
            a = dwarf_attr(out, DW_AT_specification, &mem);
        if (a == NULL || dwarf_formref_die(a, out) == NULL)
            return false;
    }
    return false;
}

static const char *function_name(struct ctr_symbolizer *s, Dwarf_Die *die, const char *symbol,
                                 int depth);

/* How a class without a name reads in a qualified name: a lambda's closure
 * (the class of an operator()) as the demangler writes it, but without the
 * number that only the mangled name has. */
static const char *unnamed_class(Dwarf_Die *cls)
{
    Dwarf_Die child;
    const char *name;
    if (dwarf_child(cls, &child) == 0)
        do
            if (dwarf_tag(&child) == DW_TAG_subprogram && (name = dwarf_diename(&child)) != NULL &&
                strcmp(name, "operator()") == 0)
                return "{lambda}";
        while (dwarf_siblingof(&child, &child) == 0);
    return "{unnamed type}";
}

static bool is_c(int lang)
{
    return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11;
}

/* The name of a function that has no linkage name (C; in C++, gcc's inlined
 * constructors and functions of lambdas and local classes): its DW_AT_name
 * qualified by the namespaces, classes and enclosing function around its
 * declaration, as the demangler would write them (template arguments stay
 * as DWARF writes them); NULL if unknown. */
static const char *qualified_name(struct ctr_symbolizer *s, Dwarf_Die *die, int depth)
{
    Dwarf_Die decl, *scopes = NULL;
    if (!declaration(die, &decl))
        return NULL;
    const char *parts[SCOPES_MAX];
    int nparts = 0;
    if ((parts[nparts++] = dwarf_diename(&decl)) == NULL)
        return NULL;
    Dwarf_Die cu;
    if (dwarf_diecu(&decl, &cu, NULL, NULL) == NULL || is_c(dwarf_srclang(&cu)))
        return intern(s, parts[0]);              /* C has no scopes: spare the walk over the unit */
    int n = dwarf_getscopes_die(&decl, &scopes); /* decl itself, then outwards */
    for (int i = 1; i < n && nparts < SCOPES_MAX; i++) {
        const char *name = dwarf_diename(&scopes[i]);
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_namespace)
            parts[nparts++] = name ? name : "(anonymous namespace)";
        else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                 tag == DW_TAG_union_type)
            parts[nparts++] = name ? name : unnamed_class(&scopes[i]);
        else if (tag == DW_TAG_subprogram) { /* a local class's function */
            if ((name = function_name(s, &scopes[i], NULL, depth + 1)) != NULL)
                parts[nparts++] = name;
            break; /* that name is qualified already */
        }
    }
    free(scopes);
    size_t len = 1;
    for (int i = 0; i < nparts; i++)
        len += strlen(parts[i]) + 2;
    char *q = malloc(len), *end = q;
    if (q == NULL)
        return NULL;
    for (int i = nparts - 1; i >= 0; i--)
        end += sprintf(end, "%s%s", parts[i], i > 0 ? "::" : "");
    const char *r = intern(s, q);
    free(q);
    return r;
}

/* The shown name (symname.h) of a subprogram or inlined-subroutine DIE:
 * from its linkage name, which the symbol table has too (so both sources
 * give one name); else from `symbol`, the symbol-table name of the code
 * (NULL for an inlined instance, which has none), if it is a C++ one: gcc
 * gives no linkage name to functions of local classes and lambdas, and
 * writes their template arguments unlike the demangler; else
 * qualified_name(). depth bounds the recursion through enclosing
 * functions. NULL if unknown. */
static const char *function_name(struct ctr_symbolizer *s, Dwarf_Die *die, const char *symbol,
                                 int depth)
{
    if (depth > 8)
        return NULL;
    Dwarf_Attribute mem;
    const char *linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &mem));
    if (linkage == NULL)
        linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &mem));
    if (linkage == NULL && symbol != NULL && strncmp(symbol, "_Z", 2) == 0)
        linkage = symbol;
    return linkage ? intern_symname(s, linkage) : qualified_name(s, die, depth);
}

/* ---------------------------------------------------------------------------
 * Inline chains, and the lookup of a PC
 * ------------------------------------------------------------------------- */

/* Interns file, made absolute against the CU's comp_dir when relative. */
static const char *abs_path(struct ctr_symbolizer *s, Dwarf_Die *cu, const char *file)
{
    Dwarf_Attribute mem;
    const char *dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &mem));
    if (file == NULL || file[0] == '/' || dir == NULL || dir[0] == '\0')
        return intern(s, file);
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p == NULL)
        return NULL;
    snprintf(p, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", file);
    const char *r = intern(s, p);
    free(p);
    return r;
}

/* Appends to chain[0..n) the subprogram and inlined_subroutine DIEs under
 * parent that contain addr, outermost first, keeping the innermost CHAIN_MAX;
 * returns the new count. Our own walk rather than dwarf_getscopes, which (in
 * elfutils 0.188) finds nothing when an inlined function's abstract origin
 * lives in another CU, as with -flto. */
static int find_chain(Dwarf_Die *parent, Dwarf_Addr addr, Dwarf_Die *chain, int n, int depth)
{
    Dwarf_Die child;
    if (depth > 256 || dwarf_child(parent, &child) != 0) /* bounds recursion on bogus DWARF */
        return n;
    do {
        int tag = dwarf_tag(&child), m;
        switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (dwarf_haspc(&child, addr) != 1)
                break;
            if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
                if (n == CHAIN_MAX)
                    memmove(chain, chain + 1, (size_t)--n * sizeof *chain);
                chain[n++] = child;
            }
            return find_chain(&child, addr, chain, n, depth + 1);
        case DW_TAG_namespace: /* code-less containers of C++ functions */
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            if ((m = find_chain(&child, addr, chain, n, depth + 1)) != n)
                return m;
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return n;
}

/* Fills out with the inline chain at module address addr (innermost first)
 * from DWARF; returns the number of frames, 0 if DWARF does not know addr. */
static int dwarf_chain(struct ctr_symbolizer *s, struct dso *d, Dwarf_Addr addr,
                       struct ctr_sym_frame *out)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = find_cu(d, addr, &bias);
    if (cu == NULL)
        return 0;
    const char *file = NULL;
    int line = 0;
    Dwarf_Line *l = dwarf_getsrc_die(cu, addr - bias);
    if (l != NULL) {
        file = abs_path(s, cu, dwarf_linesrc(l, NULL, NULL));
        if (dwarf_lineno(l, &line) != 0)
            line = 0;
    }
    /* With split DWARF (-gsplit-dwarf) the functions are in the .dwo unit
     * libdw finds for the skeleton; the line table stays in the skeleton. */
    Dwarf_Die *unit = cu, split;
    uint8_t type;
    if (dwarf_cu_info(cu->cu, NULL, &type, NULL, &split, NULL, NULL, NULL) == 0 &&
        type == DW_UT_skeleton && split.addr != NULL) /* cleared if .dwo missing */
        unit = &split;
    Dwarf_Die chain[CHAIN_MAX];
    int n = find_chain(unit, addr - bias, chain, 0, 0), k = 0;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    for (int i = n - 1; i >= 0; i--) { /* innermost first */
        Dwarf_Word v;
        bool real = dwarf_tag(&chain[i]) == DW_TAG_subprogram;
        out[k].function =
            function_name(s, &chain[i], real ? dwfl_module_addrname(d->mod, addr) : NULL, 0);
        out[k].file = file;
        out[k].line = line;
        out[k].function_line = attr_udata(&chain[i], DW_AT_decl_line, true, &v) ? clamp_line(v) : 0;
        k++;
        if (real)
            break; /* the real function; anything outside is a nested-function parent */
        /* The caller's position is where this instance was inlined. */
        file = NULL, line = 0;
        if (files == NULL && dwarf_getsrcfiles(unit, &files, &nfiles) != 0)
            files = NULL;
        if (files != NULL && attr_udata(&chain[i], DW_AT_call_file, false, &v) && v < nfiles)
            file = abs_path(s, cu, dwarf_filesrc(files, v, NULL, NULL));
        if (attr_udata(&chain[i], DW_AT_call_line, false, &v))
            line = clamp_line(v);
    }
    if (k == 0 && file != NULL) {
        /* Line info but no function DIE (e.g. assembly): keep file/line and
         * let the symbol table name the function. */
        out[0] = (struct ctr_sym_frame){.file = file, .line = line};
        return 1;
    }
    return k;
}

/* Symbolizes pc from scratch into out[0..CHAIN_MAX); returns the count. */
static int lookup(struct ctr_symbolizer *s, uint64_t pc, struct ctr_sym_frame *out)
{
    struct map *m = find_map(s, pc);
    if (m == NULL)
        return 0;
    if (m->state == MAP_UNOPENED)
        open_map(s, m);
    if (m->state != MAP_OPEN)
        return 0;
    /* Go through the file's vaddr and libdwfl's own bias for the module, so
     * that a recorded bias libdwfl ignores (ET_EXEC) still lines up. */
    Dwarf_Addr mod_bias;
    if (dwfl_module_getelf(m->dso->mod, &mod_bias) == NULL)
        return 0;
    Dwarf_Addr addr = pc - m->m.bias + mod_bias;
    int k = dwarf_chain(s, m->dso, addr, out);
    if (k > 0 && out[k - 1].function != NULL)
        return k;
    const char *name = dwfl_module_addrname(m->dso->mod, addr);
    const char *sym = name ? intern_symname(s, name) : NULL;
    if (sym == NULL)
        return k; /* k == 1 here keeps a known file/line */
    if (k == 0)
        out[k++] = (struct ctr_sym_frame){0};
    out[k - 1].function = sym;
    return k;
}

/* ---------------------------------------------------------------------------
 * Public functions
 * ------------------------------------------------------------------------- */

struct ctr_symbolizer *ctr_symbolizer_new(const struct ctr_sym_mapping *maps, size_t n)
{
    struct ctr_symbolizer *s = calloc(1, sizeof *s);
    if (s == NULL || (n > 0 && (s->maps = calloc(n, sizeof *s->maps)) == NULL))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        struct map *m = &s->maps[s->nmaps];
        m->m = maps[i];
        m->index = (int)i;
        m->m.build_id = NULL;
        m->m.build_id_len = maps[i].build_id ? maps[i].build_id_len : 0;
        if ((m->m.path = strdup(maps[i].path ? maps[i].path : "")) == NULL)
            goto fail;
        s->nmaps++;
        if (m->m.build_id_len > 0) {
            uint8_t *id = malloc(m->m.build_id_len);
            if (id == NULL)
                goto fail;
            m->m.build_id = memcpy(id, maps[i].build_id, m->m.build_id_len);
        }
    }
    if (s->nmaps > 0)
        qsort(s->maps, s->nmaps, sizeof *s->maps, cmp_start);
    for (size_t i = 0; i < s->nmaps; i++) {
        uint64_t prev = i > 0 ? s->maps[i - 1].max_limit : 0;
        s->maps[i].max_limit = s->maps[i].m.limit > prev ? s->maps[i].m.limit : prev;
    }
    return s;
fail:
    ctr_symbolizer_free(s);
    return NULL;
}

int ctr_symbolize(struct ctr_symbolizer *s, uint64_t pc, struct ctr_sym_frame *out, int max)
{
    if (s == NULL || out == NULL || max <= 0)
        return 0;
    void **slot = set_find(&s->pcs, hash_pc(pc), &pc, eq_pc, hash_pc_entry);
    struct pc_entry *e = slot ? *slot : NULL;
    if (e == NULL) {
        struct ctr_sym_frame chain[CHAIN_MAX];
        int k = lookup(s, pc, chain);
        /* slot is still valid: lookup() never touches the PC set. Under OOM
         * the answer is given but not cached. */
        if (slot == NULL || (e = malloc(sizeof *e + (size_t)k * sizeof *chain)) == NULL) {
            k = k < max ? k : max;
            memcpy(out, chain, (size_t)k * sizeof *out);
            return k;
        }
        e->pc = pc;
        e->n = k;
        memcpy(e->frames, chain, (size_t)k * sizeof *chain);
        *slot = e;
        s->pcs.len++;
    }
    int k = e->n < max ? e->n : max;
    memcpy(out, e->frames, (size_t)k * sizeof *out);
    return k;
}

int ctr_symbolizer_mapping(const struct ctr_symbolizer *s, uint64_t pc)
{
    const struct map *m = s ? find_map(s, pc) : NULL;
    return m ? m->index : -1;
}

const char *ctr_symbolizer_module_offset(const struct ctr_symbolizer *s, uint64_t pc, char *buf,
                                         size_t len)
{
    const struct map *m = s ? find_map(s, pc) : NULL;
    if (m != NULL)
        snprintf(buf, len, "%s+0x%" PRIx64, m->m.path, pc - m->m.bias);
    else
        snprintf(buf, len, "0x%" PRIx64, pc);
    return buf;
}

const char *ctr_symbolizer_warnings(const struct ctr_symbolizer *s)
{
    return s && s->warn ? s->warn : "";
}

void ctr_symbolizer_free(struct ctr_symbolizer *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->nmaps; i++) {
        free((char *)s->maps[i].m.path);
        free((uint8_t *)s->maps[i].m.build_id);
    }
    free(s->maps);
    for (struct dso *d = s->dsos, *next; d != NULL; d = next) {
        next = d->next;
        dwfl_end(d->dwfl);
        free(d->cus);
        free(d);
    }
    set_free(&s->strs);
    set_free(&s->pcs);
    free(s->warn);
    free(s);
}
