/* daemon/sink/ship-sandbox.h - is it the service's sandbox that keeps
 * shipping from the network? (ship-sandbox.c) libnats says only that no
 * server answered; the shipped ringlogd.service allows Unix sockets only,
 * and the fix, its drop-in, is worth naming.
 */
#ifndef RINGLOG_DAEMON_SHIP_SANDBOX_H
#define RINGLOG_DAEMON_SHIP_SANDBOX_H

#include <stddef.h>

/* Try what libnats does for one server of servers (comma-separated URLs):
 * an Internet socket (RestrictAddressFamilies= makes socket() fail with
 * EAFNOSUPPORT), and a non-blocking connect to the server's address
 * (IPAddressDeny= makes it fail with EPERM at once). 0 when nothing is
 * denied (the network, not the sandbox, is to blame), or the -errno of the
 * denial with a sentence for status and the log in why: the cause, and the
 * drop-in that fixes it. Costs a name lookup and a connection attempt: for
 * after a failure, not for every retry. */
int ship_sandbox_denies(const char *servers, char *why, size_t len);

#endif /* RINGLOG_DAEMON_SHIP_SANDBOX_H */
