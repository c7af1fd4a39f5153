/* File descriptors strobe keeps open inside a host program. A program may
 * close every inherited or unknown fd (daemons, closefrom) and get the same
 * number back for a file of its own: strobe must then neither read, write
 * nor close that number. So its fds live high, out of the program's usual
 * range, and each use is preceded by a check that the number still names
 * the open file strobe made (device and inode, as fstat gives them). */
#ifndef STROBE_COMMON_FDGUARD_H
#define STROBE_COMMON_FDGUARD_H

#include <stdbool.h>
#include <sys/types.h>

struct strb_fd_id {
	int fd; /* -1: none */
	dev_t dev;
	ino_t ino;
};

/* The lowest number strobe moves its fds to: 24 below the soft
 * RLIMIT_NOFILE, capped at 1000 (so it stays under select's FD_SETSIZE when
 * the limit allows), never below 3. */
int strb_fd_high_floor(void);

/* Moves fd to a number at or above strb_fd_high_floor() (close-on-exec when
 * cloexec, else inheritable), closing the old number. Returns the new
 * number, or fd itself when it cannot be moved (it is still valid). */
int strb_fd_place_high(int fd, bool cloexec);

/* A wake-up pipe, both ends placed high, close-on-exec and non-blocking:
 * a pipe, not an eventfd, since every eventfd shares one inode and so
 * cannot be told apart from one the program opened on the same number.
 * Closes the old ends first (only those still strobe's). Returns 0, or
 * -errno with rd and wr none. */
int strb_fd_wake_pipe(struct strb_fd_id *rd, struct strb_fd_id *wr);

/* Records what fd names now. Returns false (and id->fd = -1) when fd is
 * not open. */
bool strb_fd_id_set(struct strb_fd_id *id, int fd);

/* True when id->fd still names the file recorded by strb_fd_id_set.
 * Async-signal-safe (one fstat). */
bool strb_fd_id_ok(const struct strb_fd_id *id);

/* Closes id->fd only when it is still strobe's; id->fd becomes -1. */
void strb_fd_id_close(struct strb_fd_id *id);

#endif
