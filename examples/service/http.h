/* SPDX-License-Identifier: MIT */
/* http.h - the head of an HTTP/1.x message (RFC 9112), read strictly: the
 * request line or the status line, and the three headers that frame the
 * message (Content-Length, Transfer-Encoding, Connection). examples/service
 * reads requests with it, service-load responses.
 *
 * A head is refused (-400) as soon as its bytes show it cannot be valid,
 * without waiting for the rest: a control byte (other than tab, or a CR
 * and LF together ending a line), a line not ended by CRLF, a request whose
 * first bytes are not a method and a space. So a peer sending garbage is
 * answered at once, not when the head would reach its limit.
 */
#ifndef CTRACE_SERVICE_HTTP_H
#define CTRACE_SERVICE_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* Content-Length values this large or larger read as this. */
#define HTTP_LENGTH_CAP ((int64_t)1 << 40)

struct http_head {
    size_t len; /* bytes of the head, its blank line included */
    /* A request's method and target (origin-form: it begins with '/'),
     * pointing into the buffer read, not NUL-terminated. */
    const char *method, *target;
    size_t method_len, target_len;
    int status;             /* a response's status code */
    int minor;              /* HTTP/1.minor */
    int64_t content_length; /* -1: no Content-Length header */
    int chunked;            /* a Transfer-Encoding header: a body this reader cannot frame */
    /* The connection ends after this message: "Connection: close", or
     * HTTP/1.0 without "Connection: keep-alive". */
    int close;
};

/* http_parse_request() : reads the head at the start of buf[len], one of at
 * most max bytes. @return the head's length (> 0) with *h filled; 0 when
 * the head is not all here but may still be valid; -400 when it is not
 * valid (also Content-Length given twice or with Transfer-Encoding); -431
 * when it is longer than max. The body, if any, is the caller's. */
int http_parse_request(const char *buf, size_t len, size_t max, struct http_head *h);

/* http_parse_response() : the same for a response's head. */
int http_parse_response(const char *buf, size_t len, size_t max, struct http_head *h);

/* http_is() : @return whether the n bytes at s are the string lit. */
int http_is(const char *s, size_t n, const char *lit);

/* http_reason() : @return the reason phrase of a status this code uses. */
const char *http_reason(int status);

#endif
