/* SPDX-License-Identifier: MIT */
/* serve.h - serves one file (a trace converted for Perfetto) over HTTP on
 * the loopback, so that the Perfetto UI opens it by URL, as Perfetto's own
 * tools/open_trace_in_ui does: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:PORT/TOKEN/NAME
 * The UI fetches the URL from the browser, which needs the server's CORS
 * headers for the UI's origin.
 */
#ifndef CTR_SERVE_H
#define CTR_SERVE_H

#include <stddef.h>
#include <stdio.h>

/* The port the Perfetto UI can fetch from: its Content-Security-Policy lets
 * it connect to http://127.0.0.1:9001 (trace_processor --httpd's port) and
 * no other local port. Other ports work for curl and tests, not for the UI. */
#define CTR_SERVE_PORT 9001

/* The origin allowed to read the file (Access-Control-Allow-Origin). */
#define CTR_SERVE_ORIGIN "https://ui.perfetto.dev"

/* ctr_serve_file() : serves the file at `path` over HTTP/1.1 on
 * 127.0.0.1:port (port 0: a free port the system picks) under the URL path
 * "/TOKEN/NAME", TOKEN 32 random hex digits (getrandom), and prints to
 * `out` (flushed) the line
 *   Serving PATH on http://127.0.0.1:PORT/TOKEN/NAME; Ctrl-C to stop
 * and then the link that opens it in the Perfetto UI:
 *   Open in the Perfetto UI: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:PORT/TOKEN/NAME
 * Both are printed once the port is listening. `name` must be made of
 * URL-safe characters (letters, digits, '.', '-', '_', '~'; not "." or
 * ".."); NULL takes the base name of path, other characters replaced by '_'.
 *
 * A request whose Host is not 127.0.0.1, localhost or [::1] (with the
 * port served, or none) is answered 403, one without Host 400. GET and
 * HEAD of /TOKEN/NAME answer 200 with the file's bytes (its size when the
 * request comes), OPTIONS answers CORS preflights, other paths 404, other
 * methods 405, malformed or oversized requests 400. Each connection on a
 * thread of its own, up to 64 at once (more are answered 503), closed
 * after its response: a request head must come whole within 5 s, a client
 * that stalls mid-answer is dropped after 10 s, one that goes away
 * mid-file only ends its own connection (no SIGPIPE). Stopping waits for
 * the connections' threads (each ends at its next wait).
 *
 * Serves until SIGINT or SIGTERM, for which it installs handlers for the
 * duration of the call (the previous ones are restored before it returns;
 * the signal that stopped it is consumed), then prints
 * "ctrace: stopped serving" on `out` and returns 0. Errors writing to `out`
 * are not reported (a pipe without a reader raises SIGPIPE as usual).
 *
 * Not thread-safe: one call at a time in a process (the handlers are
 * process-wide); not async-signal-safe.
 * @return 0 once stopped by a signal, or a negative errno with a one-line
 *         reason in err: -EINVAL (a name that is not URL-safe, a port
 *         outside 0..65535, path not a regular file), -EADDRINUSE (the port
 *         is taken: the message says so and suggests -port), the errno of
 *         opening path, of the socket calls, or of accept() failing for
 *         want of resources (-EMFILE, -ENOMEM, ...). */
int ctr_serve_file(const char *path, const char *name, int port, FILE *out, char *err,
                   size_t errlen);

#endif
