/* SPDX-License-Identifier: MIT */
/* symname.c - demangles C++ names and reduces them to the form symname.h
 * describes.
 *
 * The reduction reads the demangler's output, not the mangled grammar: it
 * copies the name, drops every parenthesised group at bracket depth 0 (the
 * function's parameters, and an enclosing function's before "::"), stops
 * after the function's own parameter list (what follows is qualifiers and
 * "[clone ...]"), and drops what precedes a space at depth 0 (a template
 * function's return type). Operator names ("operator()", "operator<<",
 * "operator new") and "(anonymous namespace)" are copied as units, so their
 * brackets and spaces are not mistaken for structure.
 */
#include "symbols/symname.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler, the one of the Itanium C++ ABI that gcc and clang
 * use on Linux. <cxxabi.h> declares it for C++ only. @return a malloc'd
 * name with *status 0; NULL with *status -1 (no memory), -2 (not a mangled
 * name) or -3 (bad argument). */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* Longer names are shown mangled: the demangler's time and stack grow with
 * its input, and a hostile file may hold any string. Real names are rarely
 * over 1 KiB. */
#define MANGLED_MAX 8192

/* Special names whose rest is a function's name: the words are kept and the
 * rest is reduced. */
static const char *const special_prefixes[] = {
    "non-virtual thunk to ",  "virtual thunk to ",      "covariant return thunk to ",
    "transaction clone for ", "TLS init function for ", "TLS wrapper function for ",
};

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The length of the operator name at s, which starts with the word
 * "operator": "operator()", "operator<<=", "operator< " before template
 * arguments, "operator\"\" _km", and the word operators ("operator new[]",
 * "operator std::vector<int> const&") up to their parameter list. */
static size_t operator_len(const char *s)
{
    size_t n = strlen("operator");
    if (s[n] == '(' && s[n + 1] == ')')
        return n + 2;
    if (s[n] == '"' && s[n + 1] == '"') { /* a literal operator: "" and a suffix */
        n += 2 + (s[n + 2] == ' ');
        while (is_ident(s[n]))
            n++;
        return n;
    }
    if (s[n] == ' ') {
        int depth = 0;
        for (; s[n] && !(depth == 0 && s[n] == '('); n++)
            depth += (s[n] == '<' || s[n] == '[') - (s[n] == '>' || s[n] == ']');
        return n;
    }
    n += strspn(s + n, "+-*/%^&|~!=<>,[]");
    if (s[n] == ' ' && s[n + 1] == '<') /* "operator< <int>": its template arguments */
        n++;
    return n;
}

/* The index of the ')' that closes the '(' at s[i]; 0 if there is none. */
static size_t closing_paren(const char *s, size_t i)
{
    int depth = 0;
    for (; s[i]; i++) {
        depth += (s[i] == '(') - (s[i] == ')');
        if (depth == 0)
            return i;
    }
    return 0;
}

char *ctr_symname_reduce(const char *in)
{
    if (in == NULL)
        return NULL;
    char *out = malloc(strlen(in) + 1);
    if (out == NULL)
        return NULL;
    size_t i = 0, o = 0, keep = 0; /* out[0..keep) is a special name's words */
    for (size_t p = 0; p < sizeof special_prefixes / sizeof *special_prefixes; p++)
        if (starts_with(in, special_prefixes[p])) {
            keep = i = o = strlen(special_prefixes[p]);
            memcpy(out, in, keep);
            break;
        }
    int depth = 0;       /* of <>, [], {} and () */
    bool params = false; /* the function's own parameter list was found */
    while (in[i] != '\0' && !params) {
        const char *s = in + i;
        size_t n = 0;
        if (starts_with(s, "[abi:")) { /* an ABI tag: noise to a reader */
            const char *end = strchr(s, ']');
            if (end == NULL)
                break;
            i += (size_t)(end - s) + 1;
            continue;
        }
        if (depth == 0 && starts_with(s, "(anonymous namespace)"))
            n = strlen("(anonymous namespace)");
        else if (starts_with(s, "operator") && (i == 0 || !is_ident(s[-1])) && !is_ident(s[8]))
            n = operator_len(s);
        if (n > 0) {
            memcpy(out + o, s, n);
            i += n, o += n;
            continue;
        }
        if (depth == 0 && *s == '(') {
            size_t end = closing_paren(in, i);
            if (end == 0)
                break;
            i = end + 1;
            params = !starts_with(in + i, "::"); /* else an enclosing function's */
            continue;
        }
        if (depth == 0 && *s == ' ') { /* what came before is a return type */
            o = keep;
            i++;
            continue;
        }
        depth += (strchr("<[{(", *s) != NULL) - (strchr(">]})", *s) != NULL);
        if (depth < 0)
            break;
        out[o++] = *s;
        i++;
    }
    if (!params || o == keep) { /* no function name, or one we do not understand */
        free(out);
        return strdup(in);
    }
    out[o] = '\0';
    return out;
}

char *ctr_symname(const char *symbol)
{
    if (symbol == NULL)
        return NULL;
    if (!starts_with(symbol, "_Z") || strlen(symbol) > MANGLED_MAX)
        return strdup(symbol);
    int status = -1;
    char *demangled = __cxa_demangle(symbol, NULL, NULL, &status);
    if (demangled == NULL || status != 0) {
        free(demangled);
        return strdup(symbol);
    }
    char *name = ctr_symname_reduce(demangled);
    free(demangled);
    return name;
}
