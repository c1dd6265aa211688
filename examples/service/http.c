/* SPDX-License-Identifier: MIT */
/* http.c - the strict reader of HTTP/1.x heads (http.h).
 *
 * A head is lines ended by CRLF, the last one empty. The reader first finds
 * that empty line within max bytes (or refuses the head early, see http.h),
 * then reads the lines of the head alone: each step knows where its line
 * ends, so nothing is read past the head.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem under -std=c11 */
#endif

#include "http.h"

#include <string.h>
#include <strings.h>

/* The characters of a token (RFC 9110, 5.6.2): method and header names. */
static int is_tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Bytes that may be in no head: the controls but tab, CR and LF; DEL. */
static int is_banned(unsigned char ch)
{
    return (ch < 0x20 && ch != '\t' && ch != '\r' && ch != '\n') || ch == 0x7f;
}

/* The end of the head in buf[len]. @return its length, 0 when it may still
 * come, or -400 / -431 as http_parse_request. */
static int find_head(const char *buf, size_t len, size_t max, int request)
{
    size_t n = len < max ? len : max;
    const char *e = memmem(buf, n, "\r\n\r\n", 4);
    if (e)
        return (int)(e - buf) + 4;
    for (size_t i = 0; i < n; i++) {
        if (is_banned((unsigned char)buf[i]) ||
            (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) ||
            (buf[i] == '\r' && i + 1 < n && buf[i + 1] != '\n'))
            return -400;
    }
    if (request) {
        size_t i = 0;
        while (i < n && is_tchar((unsigned char)buf[i]))
            i++;
        if (i < n && (i == 0 || buf[i] != ' '))
            return -400; /* not a method and a space */
    }
    return len >= max ? -431 : 0;
}

/* The head's text being read, line by line: p..end, end at the CRLF of the
 * head's empty line. */
struct lines {
    const char *p, *end;
};

/* The next line, [*s, *s + *n), without its CRLF. @return 0, or -1 when a
 * line holds a CR or LF not in its CRLF. */
static int next_line(struct lines *l, const char **s, size_t *n)
{
    const char *eol = memchr(l->p, '\r', (size_t)(l->end - l->p + 1)); /* end's own CR last */
    if (!eol || eol[1] != '\n' || memchr(l->p, '\n', (size_t)(eol - l->p)))
        return -1;
    *s = l->p;
    *n = (size_t)(eol - l->p);
    l->p = eol + 2;
    return 0;
}

/* "HTTP/1.D" at s: @return the minor version D, or -1. */
static int version(const char *s, size_t n)
{
    if (n != 8 || memcmp(s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9')
        return -1;
    return s[7] - '0';
}

/* Whether the comma-separated list s[n] holds the token tok (any case). */
static int has_token(const char *s, size_t n, const char *tok)
{
    size_t t = strlen(tok), i = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
            i++;
        size_t b = i;
        while (i < n && s[i] != ',' && s[i] != ' ' && s[i] != '\t')
            i++;
        if (i - b == t && strncasecmp(s + b, tok, t) == 0)
            return 1;
    }
    return 0;
}

/* Reads the header lines after the first into *h. @return 0, or -400. */
static int read_headers(struct lines *l, struct http_head *h)
{
    int keep_alive = 0;
    h->content_length = -1;
    h->chunked = 0;
    h->close = 0;
    while (l->p < l->end) {
        const char *s;
        size_t n, name = 0;
        if (next_line(l, &s, &n) != 0)
            return -400;
        while (name < n && is_tchar((unsigned char)s[name]))
            name++;
        if (name == 0 || name == n || s[name] != ':')
            return -400; /* no name, or a space before the colon (RFC 9112, 5.1) */
        for (size_t i = name + 1; i < n; i++) {
            if (is_banned((unsigned char)s[i]))
                return -400;
        }
        size_t v = name + 1, e = n;
        while (v < e && (s[v] == ' ' || s[v] == '\t'))
            v++;
        while (e > v && (s[e - 1] == ' ' || s[e - 1] == '\t'))
            e--;
        if (name == 14 && strncasecmp(s, "content-length", 14) == 0) {
            if (h->content_length >= 0 || v == e)
                return -400;
            int64_t x = 0;
            for (size_t i = v; i < e; i++) {
                if (s[i] < '0' || s[i] > '9')
                    return -400;
                x = x >= HTTP_LENGTH_CAP ? x : x * 10 + (s[i] - '0');
            }
            h->content_length = x < HTTP_LENGTH_CAP ? x : HTTP_LENGTH_CAP;
        } else if (name == 17 && strncasecmp(s, "transfer-encoding", 17) == 0) {
            h->chunked = 1;
        } else if (name == 10 && strncasecmp(s, "connection", 10) == 0) {
            h->close |= has_token(s + v, e - v, "close");
            keep_alive |= has_token(s + v, e - v, "keep-alive");
        }
    }
    if (h->chunked && h->content_length >= 0)
        return -400; /* two framings: the smuggler's request (RFC 9112, 6.3) */
    if (h->minor == 0 && !keep_alive)
        h->close = 1;
    return 0;
}

int http_parse_request(const char *buf, size_t len, size_t max, struct http_head *h)
{
    int hl = find_head(buf, len, max, 1);
    if (hl <= 0)
        return hl;
    struct lines l = {buf, buf + hl - 2};
    const char *s;
    size_t n, m = 0, t;
    if (next_line(&l, &s, &n) != 0)
        return -400;
    while (m < n && is_tchar((unsigned char)s[m]))
        m++;
    if (m == 0 || m == n || s[m] != ' ')
        return -400;
    t = m + 1;
    while (t < n && s[t] > ' ' && s[t] < 0x7f)
        t++;
    if (t == m + 1 || s[m + 1] != '/' || t == n || s[t] != ' ')
        return -400;
    *h = (struct http_head){.len = (size_t)hl,
                            .method = s,
                            .method_len = m,
                            .target = s + m + 1,
                            .target_len = t - m - 1,
                            .minor = version(s + t + 1, n - t - 1)};
    if (h->minor < 0 || read_headers(&l, h) != 0)
        return -400;
    return hl;
}

int http_parse_response(const char *buf, size_t len, size_t max, struct http_head *h)
{
    int hl = find_head(buf, len, max, 0);
    if (hl <= 0)
        return hl;
    struct lines l = {buf, buf + hl - 2};
    const char *s;
    size_t n;
    if (next_line(&l, &s, &n) != 0 || n < 13 || s[8] != ' ' || s[12] != ' ')
        return -400;
    *h = (struct http_head){.len = (size_t)hl, .minor = version(s, 8)};
    for (int i = 9; i < 12; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -400;
        h->status = h->status * 10 + (s[i] - '0');
    }
    for (size_t i = 13; i < n; i++) {
        if (is_banned((unsigned char)s[i]))
            return -400;
    }
    if (h->minor < 0 || h->status < 100 || read_headers(&l, h) != 0)
        return -400;
    return hl;
}

int http_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

const char *http_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 431:
        return "Request Header Fields Too Large";
    default:
        return "Unknown";
    }
}
