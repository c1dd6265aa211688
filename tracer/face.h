/* SPDX-License-Identifier: MIT */
/* face.h - what the face's own files (api.c, autostart.c, control.c) share
 * that no layer below calls. */
#ifndef CTR_FACE_H
#define CTR_FACE_H

/* The control channel (control.c, CONTROL.md), continued (open is in
 * collect/face.h): close, under the API lock (not from the collector): ends
 * what a client started, closes and removes the socket. */
void ctr__control_close(void);
/* In a forked child: the parent's channel is not the child's. */
void ctr__control_forked(void);

#endif /* CTR_FACE_H */
