/* compat/compat-win.c - see compat-win.h. */
#include "compat-win.h"

#include <dirent.h>
#include <errno.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <windows.h>

ssize_t ringlog_pread(int fd, void *buf, size_t n, int64_t off)
{
	HANDLE h = (HANDLE)_get_osfhandle(fd);
	OVERLAPPED ov = { .Offset = (DWORD)off, .OffsetHigh = (DWORD)((uint64_t)off >> 32) };
	DWORD got = 0;

	if (h == INVALID_HANDLE_VALUE) {
		errno = EBADF;
		return -1;
	}
	if (n > 0x7fffffff)
		n = 0x7fffffff;
	if (!ReadFile(h, buf, (DWORD)n, &got, &ov)) {
		/* reading at or past the end is not an error for pread */
		if (GetLastError() == ERROR_HANDLE_EOF)
			return 0;
		errno = EIO;
		return -1;
	}
	return (ssize_t)got;
}

char *ringlog_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

/* Matches one bracket expression at *pp against c; advances *pp past it.
 * Returns 1 (match), 0 (no match) or -1 (no closing ']': literal '['). */
static int bracket(const char **pp, char c)
{
	const char *p = *pp + 1;
	int neg = 0, hit = 0;

	if (*p == '!' || *p == '^')
		neg = 1, p++;
	for (int first = 1; *p && (first || *p != ']'); first = 0) {
		char lo = *p == '\\' && p[1] ? *++p : *p, hi = lo;

		p++;
		if (*p == '-' && p[1] && p[1] != ']') {
			hi = p[1] == '\\' && p[2] ? p[2] : p[1];
			p += p[1] == '\\' && p[2] ? 3 : 2;
		}
		if ((unsigned char)c >= (unsigned char)lo && (unsigned char)c <= (unsigned char)hi)
			hit = 1;
	}
	if (*p != ']')
		return -1;
	*pp = p + 1;
	return hit != neg;
}

int fnmatch(const char *p, const char *s, int flags)
{
	const char *star_p = NULL, *star_s = NULL;

	(void)flags;
	for (;;) {
		if (*p == '*') {
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (*s) {
			const char *q = p;
			int ok;

			if (*p == '?') {
				ok = 1, q = p + 1;
			} else if (*p == '[' && (ok = bracket(&q, *s)) >= 0) {
				/* q moved past the bracket */
			} else {
				if (*p == '\\' && p[1])
					p++;
				ok = *p && *p == *s, q = p + 1;
			}
			if (ok) {
				p = q, s++;
				continue;
			}
		} else if (!*p) {
			return 0;
		}
		if (!star_p || !*star_s)
			return FNM_NOMATCH;
		p = star_p;
		s = ++star_s;
	}
}

/* Linux's errno names by value (asm-generic/errno*.h): events carry the
 * errno of the program that emitted them, which ran on Linux or used the
 * same values, so Windows' own (different) table would misname them. */
static const char *const linux_errno_names[] = {
	[1] = "EPERM",
	[2] = "ENOENT",
	[3] = "ESRCH",
	[4] = "EINTR",
	[5] = "EIO",
	[6] = "ENXIO",
	[7] = "E2BIG",
	[8] = "ENOEXEC",
	[9] = "EBADF",
	[10] = "ECHILD",
	[11] = "EAGAIN",
	[12] = "ENOMEM",
	[13] = "EACCES",
	[14] = "EFAULT",
	[15] = "ENOTBLK",
	[16] = "EBUSY",
	[17] = "EEXIST",
	[18] = "EXDEV",
	[19] = "ENODEV",
	[20] = "ENOTDIR",
	[21] = "EISDIR",
	[22] = "EINVAL",
	[23] = "ENFILE",
	[24] = "EMFILE",
	[25] = "ENOTTY",
	[26] = "ETXTBSY",
	[27] = "EFBIG",
	[28] = "ENOSPC",
	[29] = "ESPIPE",
	[30] = "EROFS",
	[31] = "EMLINK",
	[32] = "EPIPE",
	[33] = "EDOM",
	[34] = "ERANGE",
	[35] = "EDEADLK",
	[36] = "ENAMETOOLONG",
	[37] = "ENOLCK",
	[38] = "ENOSYS",
	[39] = "ENOTEMPTY",
	[40] = "ELOOP",
	[42] = "ENOMSG",
	[43] = "EIDRM",
	[44] = "ECHRNG",
	[45] = "EL2NSYNC",
	[46] = "EL3HLT",
	[47] = "EL3RST",
	[48] = "ELNRNG",
	[49] = "EUNATCH",
	[50] = "ENOCSI",
	[51] = "EL2HLT",
	[52] = "EBADE",
	[53] = "EBADR",
	[54] = "EXFULL",
	[55] = "ENOANO",
	[56] = "EBADRQC",
	[57] = "EBADSLT",
	[59] = "EBFONT",
	[60] = "ENOSTR",
	[61] = "ENODATA",
	[62] = "ETIME",
	[63] = "ENOSR",
	[64] = "ENONET",
	[65] = "ENOPKG",
	[66] = "EREMOTE",
	[67] = "ENOLINK",
	[68] = "EADV",
	[69] = "ESRMNT",
	[70] = "ECOMM",
	[71] = "EPROTO",
	[72] = "EMULTIHOP",
	[73] = "EDOTDOT",
	[74] = "EBADMSG",
	[75] = "EOVERFLOW",
	[76] = "ENOTUNIQ",
	[77] = "EBADFD",
	[78] = "EREMCHG",
	[79] = "ELIBACC",
	[80] = "ELIBBAD",
	[81] = "ELIBSCN",
	[82] = "ELIBMAX",
	[83] = "ELIBEXEC",
	[84] = "EILSEQ",
	[85] = "ERESTART",
	[86] = "ESTRPIPE",
	[87] = "EUSERS",
	[88] = "ENOTSOCK",
	[89] = "EDESTADDRREQ",
	[90] = "EMSGSIZE",
	[91] = "EPROTOTYPE",
	[92] = "ENOPROTOOPT",
	[93] = "EPROTONOSUPPORT",
	[94] = "ESOCKTNOSUPPORT",
	[95] = "EOPNOTSUPP",
	[96] = "EPFNOSUPPORT",
	[97] = "EAFNOSUPPORT",
	[98] = "EADDRINUSE",
	[99] = "EADDRNOTAVAIL",
	[100] = "ENETDOWN",
	[101] = "ENETUNREACH",
	[102] = "ENETRESET",
	[103] = "ECONNABORTED",
	[104] = "ECONNRESET",
	[105] = "ENOBUFS",
	[106] = "EISCONN",
	[107] = "ENOTCONN",
	[108] = "ESHUTDOWN",
	[109] = "ETOOMANYREFS",
	[110] = "ETIMEDOUT",
	[111] = "ECONNREFUSED",
	[112] = "EHOSTDOWN",
	[113] = "EHOSTUNREACH",
	[114] = "EALREADY",
	[115] = "EINPROGRESS",
	[116] = "ESTALE",
	[117] = "EUCLEAN",
	[118] = "ENOTNAM",
	[119] = "ENAVAIL",
	[120] = "EISNAM",
	[121] = "EREMOTEIO",
	[122] = "EDQUOT",
	[123] = "ENOMEDIUM",
	[124] = "EMEDIUMTYPE",
	[125] = "ECANCELED",
	[126] = "ENOKEY",
	[127] = "EKEYEXPIRED",
	[128] = "EKEYREVOKED",
	[129] = "EKEYREJECTED",
	[130] = "EOWNERDEAD",
	[131] = "ENOTRECOVERABLE",
	[132] = "ERFKILL",
};

const char *ringlog_errno_name(int e)
{
	if (e <= 0 || (size_t)e >= sizeof(linux_errno_names) / sizeof(linux_errno_names[0]))
		return NULL;
	return linux_errno_names[e];
}

/* Only what `ringlog` parses: digits for %Y %m %d %H %M %S, and
 * literal characters. */
char *ringlog_strptime(const char *s, const char *fmt, struct tm *tm)
{
	for (; *fmt; fmt++) {
		int v = 0, digits = 0, max = 2;
		int *field;

		if (*fmt != '%') {
			if (*s++ != *fmt)
				return NULL;
			continue;
		}
		switch (*++fmt) {
		case 'Y': field = &tm->tm_year, max = 4; break;
		case 'm': field = &tm->tm_mon; break;
		case 'd': field = &tm->tm_mday; break;
		case 'H': field = &tm->tm_hour; break;
		case 'M': field = &tm->tm_min; break;
		case 'S': field = &tm->tm_sec; break;
		default: return NULL;
		}
		while (digits < max && *s >= '0' && *s <= '9')
			v = v * 10 + (*s++ - '0'), digits++;
		if (!digits)
			return NULL;
		if (*fmt == 'Y')
			v -= 1900;
		else if (*fmt == 'm')
			v -= 1;
		*field = v;
	}
	return (char *)s;
}

int statvfs(const char *path, struct statvfs *v)
{
	ULARGE_INTEGER avail, total;

	if (!GetDiskFreeSpaceExA(path, &avail, &total, NULL)) {
		errno = ENOENT;
		return -1;
	}
	v->f_frsize = 1;
	v->f_blocks = total.QuadPart;
	v->f_bavail = avail.QuadPart;
	return 0;
}

int alphasort(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int scandir(const char *dir, struct dirent ***names, int (*filter)(const struct dirent *),
	    int (*cmp)(const struct dirent **, const struct dirent **))
{
	DIR *d = opendir(dir);
	struct dirent *e, **v = NULL, **bigger;
	int n = 0, cap = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (filter && !filter(e))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if (!(bigger = realloc(v, (size_t)cap * sizeof(*v))))
				goto fail;
			v = bigger;
		}
		if (!(v[n] = malloc(sizeof(*e))))
			goto fail;
		memcpy(v[n++], e, sizeof(*e));
	}
	closedir(d);
	if (cmp)
		qsort(v, (size_t)n, sizeof(*v), (int (*)(const void *, const void *))cmp);
	*names = v;
	return n;
fail:
	while (n)
		free(v[--n]);
	free(v);
	closedir(d);
	errno = ENOMEM;
	return -1;
}
