/* daemon/sink/ship-sandbox.c - tell a sandbox's denial from a network
 * failure, and name the drop-in (ship-sandbox.h; systemd/ringlogd-ship.conf,
 * installed as an example under the documentation directory).
 */
#define _GNU_SOURCE
#include "sink/ship-sandbox.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef RINGLOG_DOCDIR
#define RINGLOG_DOCDIR "/usr/share/doc/ringlog"
#endif

#define DROP_IN_HOWTO \
	"copy " RINGLOG_DOCDIR "/examples/ringlogd.service.d/ship.conf to " \
	"/etc/systemd/system/ringlogd.service.d/ (or `systemctl edit ringlogd`), name the " \
	"cluster's addresses in its IPAddressAllow=, then systemctl daemon-reload and " \
	"systemctl restart ringlogd (ringlogd(8) SHIPPING); storing locally meanwhile"

static bool is_denial(int err)
{
	return err == EAFNOSUPPORT || err == EPERM || err == EACCES;
}

/* host and port of the first URL of servers ("nats://[user:pw@]host[:port]",
 * "[v6]:port"; 4222 when none is given). */
static void first_server(const char *servers, char *host, size_t hlen, char *port, size_t plen)
{
	const char *u = servers, *end = strchr(servers, ','), *p, *at, *colon;
	size_t n;

	if (!end)
		end = u + strlen(u);
	if ((p = strstr(u, "://")) && p < end)
		u = p + 3;
	at = memchr(u, '@', (size_t)(end - u));
	if (at)
		u = at + 1;
	snprintf(port, plen, "4222");
	if (*u == '[') { /* [v6]:port */
		const char *close = memchr(u, ']', (size_t)(end - u));

		if (!close)
			close = end;
		n = (size_t)(close - u - 1);
		snprintf(host, hlen, "%.*s", (int)n, u + 1);
		if (close < end && close[1] == ':')
			snprintf(port, plen, "%.*s", (int)(end - close - 2), close + 2);
		return;
	}
	colon = memchr(u, ':', (size_t)(end - u));
	n = (size_t)((colon ? colon : end) - u);
	snprintf(host, hlen, "%.*s", (int)n, u);
	if (colon)
		snprintf(port, plen, "%.*s", (int)(end - colon - 1), colon + 1);
}

int ship_sandbox_denies(const char *servers, char *why, size_t len)
{
	static const int families[] = { AF_INET, AF_INET6 };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char host[256], port[16], addr[NI_MAXHOST];
	int fd, err = 0;

	why[0] = '\0';
	first_server(servers, host, sizeof(host), port, sizeof(port));
	/* The family first: no name lookup is needed to see it denied. */
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		fd = socket(families[i], SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		err = errno;
		if (!is_denial(err) || (families[i] == AF_INET6 && err == EAFNOSUPPORT &&
					access("/proc/net/if_inet6", F_OK) != 0))
			continue; /* a kernel without IPv6 is no sandbox */
		snprintf(why, len, "the sandbox denies Internet sockets (socket(%s): %s): the "
			 "shipped ringlogd.service allows AF_UNIX only (RestrictAddressFamilies=); "
			 DROP_IN_HOWTO, families[i] == AF_INET ? "AF_INET" : "AF_INET6", strerror(err));
		return -err;
	}
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return 0; /* the name is the problem, said by libnats */
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		/* IPAddressDeny= refuses at once, before a packet leaves; a
		 * connection that goes on is dropped unfinished */
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && is_denial(errno)) {
			err = errno;
			if (getnameinfo(a->ai_addr, a->ai_addrlen, addr, sizeof(addr), NULL, 0,
					NI_NUMERICHOST) != 0)
				snprintf(addr, sizeof(addr), "%s", host);
			snprintf(why, len, "the sandbox (or a local firewall) denies connecting to %s "
				 "port %s (connect: %s): the shipped ringlogd.service has "
				 "IPAddressDeny=any; " DROP_IN_HOWTO,
				 addr, port, strerror(err));
			close(fd);
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	return -err;
}
