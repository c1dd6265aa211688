/* SPDX-License-Identifier: MIT */
/* badcases.h - service-load -bad: requests that examples/service must
 * refuse with the right 4xx, edge cases of the protocol it must serve
 * (pipelining, a request in pieces, HTTP/1.0), and clients that disconnect
 * mid-request, which it must simply drop.
 */
#ifndef CTRACE_SERVICE_BADCASES_H
#define CTRACE_SERVICE_BADCASES_H

/* badcases_run() : runs every case against 127.0.0.1:port, each on a new
 * connection, then checks that a good request on another one is answered.
 * Prints one line
 *
 *   cases=N failed=F good=G bad=B
 *
 * good: the answers with 200 it read (each lookup and update among them
 * checked exactly); bad: those with a 4xx. A server that served nothing
 * else counts as many (its served= and bad=). Each failed case is named on
 * stderr. @return 0 when every case passed, else 1. */
int badcases_run(int port);

#endif
