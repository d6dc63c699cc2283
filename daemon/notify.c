/* daemon/notify.c - systemd's readiness protocol: a datagram of
 * "KEY=VALUE\n" lines to the AF_UNIX socket in $NOTIFY_SOCKET (a path, or
 * an abstract name starting with '@'). No libsystemd needed. */
#define _GNU_SOURCE
#include "daemon.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sd_notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n;
	socklen_t alen;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if (n >= sizeof(a.sun_path) || (path[0] != '/' && path[0] != '@'))
		return -EINVAL;
	memcpy(a.sun_path, path, n);
	if (path[0] == '@')
		a.sun_path[0] = 0;
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a, alen) < 0)
		err = -errno;
	close(fd);
	return err;
}
