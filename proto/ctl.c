/* proto/ctl.c - send one control frame (ctl.h), with a descriptor riding
 * on its first byte when there is one: the piece of the framing that the
 * library, the daemon and the hostile-client tests all need. */
#define _GNU_SOURCE
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

long ringlog_ctl_send(int sock, uint16_t type, const void *payload, uint32_t len, int pass_fd,
		      int flags)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };
	struct iovec iov[2] = { { &f, sizeof(f) }, { (void *)payload, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	ssize_t n;

	if (pass_fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
	return n < 0 ? -errno : (long)n;
}

/* getgrgid_r/getpwuid_r, not the static-buffer calls: the library's thread
 * may ask while the program asks too. */
static const char *group_name(gid_t gid, char *out, size_t len)
{
	struct group g, *found = NULL;
	char buf[4096];

	if (getgrgid_r(gid, &g, buf, sizeof(buf), &found) == 0 && found)
		snprintf(out, len, "%s", g.gr_name);
	else
		snprintf(out, len, "%u", (unsigned)gid);
	return out;
}

static const char *user_name(uid_t uid, char *out, size_t len)
{
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found)
		snprintf(out, len, "%s", pw.pw_name);
	else
		snprintf(out, len, "%u", (unsigned)uid);
	return out;
}

void ringlog_ctl_refusal(const char *path, char *buf, size_t len)
{
	char p[4096], grp[64], owner[64], me[64];
	const char *what = "the socket";
	int need = W_OK; /* connect() needs write permission on the socket */
	struct stat st;
	mode_t gbit, obit;

	/* The first directory on the way that we may not search refuses
	 * before the socket's own mode is even looked at. */
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (faccessat(AT_FDCWD, p, X_OK, AT_EACCESS) < 0 && errno == EACCES) {
			what = "the directory";
			need = X_OK;
			break;
		}
		*s = '/';
	}
	if (stat(p, &st) < 0) {
		snprintf(buf, len, "access refused by %s (%s)", p, strerror(errno));
		return;
	}
	group_name(st.st_gid, grp, sizeof(grp));
	user_name(st.st_uid, owner, sizeof(owner));
	user_name(geteuid(), me, sizeof(me));
	gbit = need == W_OK ? S_IWGRP : S_IXGRP;
	obit = need == W_OK ? S_IWOTH : S_IXOTH;
	if (need == W_OK && faccessat(AT_FDCWD, p, W_OK, AT_EACCESS) == 0) {
		/* The mode lets us in: a security module or a policy refused. */
		snprintf(buf, len, "access refused by %s (mode %04o, owner %s, group %s), not by its "
			 "mode: a security policy (AppArmor, SELinux, seccomp) refuses this program",
			 p, (unsigned)(st.st_mode & 07777), owner, grp);
	} else if ((st.st_mode & gbit) && st.st_gid != 0) {
		snprintf(buf, len, "access refused by %s (%s, mode %04o, owner %s, group %s): join "
			 "group %s (usermod -aG %s %s, then log in again)%s", p, what,
			 (unsigned)(st.st_mode & 07777), owner, grp, grp, grp, me,
			 need == W_OK && !(st.st_mode & obit) ?
			 ", or ask for socket_mode \"0666\" in ringlogd.json (ringlogd checks "
			 "every peer's groups itself)" : "");
	} else {
		snprintf(buf, len, "access refused by %s (%s, mode %04o, owner %s, group %s): its mode "
			 "admits no group to join; ask the administrator for %s", p, what,
			 (unsigned)(st.st_mode & 07777), owner, grp,
			 need == W_OK ? "socket_mode \"0666\" in ringlogd.json (ringlogd checks every "
			 "peer's groups itself)" : "mode 0755 on it");
	}
}
