/* daemon/sink/ship.c - ship every sealed chunk to a NATS JetStream stream,
 * exactly once (shipping.h; message format proto/ship.h).
 *
 * Three threads touch this state, under one mutex:
 *   the loop      notes sealed chunks (chunk op), deleted segments, STATUS;
 *                 never waits on the network or the disk here
 *   ours          connects, reads chunks back from the segment files
 *                 (ship-disk.c), publishes them asynchronously, writes
 *                 ship.state
 *   libnats's     acknowledgements (on_ack)
 *
 * Exactly once: the message id is the chunk's name (host, boot id,
 * segment, chunk, part), so whatever is sent again (after a crash, an
 * outage, a lost ack) JetStream discards within the stream's duplicate
 * window; and what is acknowledged is never sent again, because the
 * acknowledged position (the longest run of acks from the start of the
 * window) is in ship.state. A failed publish or ack rewinds to the first
 * unacknowledged message once everything outstanding has come back (go-
 * back-N), so that the stream holds a host's chunks in order except
 * around a failure, where readers put them back in order by id.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "sink/shipping.h"
#include "sink/ship-disk.h"
#include "sink/ship-sandbox.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

enum { P_SENT, P_ACKED, P_FAILED };

/* The ship section as the thread uses it (conf_from()). */
struct ship_conf {
	char host[RINGLOG_SHIP_HOST_MAX], subject[300], stream[64];
	char servers[RINGLOG_SHIP_SERVERS_MAX];
	char shown[RINGLOG_SHIP_SERVERS_MAX]; /* the same without "user:pass@" */
	struct ringlog_config cfg;            /* credentials, stream creation */
	unsigned max_pending;
	uint64_t max_backlog, interval_ns;
	uint64_t files;                       /* the files named: inode, size, time */
};

struct pend {
	uint64_t seg, chunk;
	uint16_t part, parts;
	uint8_t state;
	uint32_t events;
	uint64_t bytes;        /* message bytes */
	uint64_t file_end;     /* offset past the chunk in its segment */
	uint64_t last_real_ns;
	uint64_t not_shipped;  /* the loss count this message carries */
};

struct ship {
	struct daemon *d;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t stop_by_ns;   /* shutdown: ship what is on disk until then */

	/* configuration: the thread's own copy (it never reads d->cfg),
	 * replaced by the thread itself when a reload changed it (next) */
	char dir[1024];        /* storage_dir: fixed for the process's life */
	struct ship_conf c, next;
	struct pend *next_win; /* next's window, allocated by the loop */
	size_t next_cap;
	bool reload;           /* next is waiting */
	uint64_t reload_by_ns; /* wait for outstanding acks until then */
	bool off;              /* a reload emptied ship.servers */

	/* what the store has on disk: chunks up to front_chunk of front_seg,
	 * every chunk of the segments before it (loop -> thread) */
	uint64_t front_seg;
	int64_t front_chunk;   /* -1: none of front_seg yet */

	/* acknowledged: every chunk up to ack_chunk of ack_seg */
	bool ack_valid;
	uint64_t ack_seg, ack_chunk, ack_off, ack_real_ns;
	uint64_t acked_chunks, acked_msgs, acked_events, acked_bytes;
	uint64_t last_ack_real_ns;
	bool dirty;            /* ship.state is behind */
	uint64_t reading_seg;  /* the segment the thread has open, UINT64_MAX none */

	/* the window, oldest first */
	struct pend *win;
	size_t cap, head, n;
	bool failed;

	/* counters and state for STATUS and the log */
	uint64_t resent, dedup, not_shipped_total, not_shipped_pending;
	uint64_t ns_by_reason[3];
	uint32_t ns_reason;    /* of the pending count */
	bool ns_inflight;
	char state[64];        /* "connecting", "connected", "refused", ... */
	char error[512];       /* the last problem, for status */
	char server[256];      /* connected URL, without user info */
	char refusal[128];     /* a server refused our credentials: what it said */
	bool sandboxed;        /* the service's sandbox denies the network */
	uint64_t probe_ns;     /* when sandboxed() last looked */
	struct {               /* lines for the loop to log, oldest first */
		char text[600];
		int level;
	} notes[8];
	unsigned note_gen, note_seen;
	uint64_t max_payload;

	natsConnection *nc;
	jsCtx *js;
};

static struct ship *g; /* one daemon per process */

/* ------------------------------------------------------------------------
 * Small helpers (callers hold mu unless said).
 */

static void say(struct ship *s, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct ship *s, int level, const char *fmt, ...)
{
	unsigned i = s->note_gen % 8;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->notes[i].text, sizeof(s->notes[i].text), fmt, ap);
	va_end(ap);
	s->notes[i].level = level;
	s->note_gen++;
}

static void set_error(struct ship *s, const char *state, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_error(struct ship *s, const char *state, const char *fmt, ...)
{
	char was[sizeof(s->error)];
	va_list ap;

	memcpy(was, s->error, sizeof(was));
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	snprintf(s->state, sizeof(s->state), "%s", state);
	if (strcmp(was, s->error)) /* said once, not at each retry */
		say(s, LOG_WARNING, "ship: %s", s->error);
}

/* Wait on cv at most ms (with mu held). */
static void wait_ms(struct ship *s, unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

static struct pend *win_at(struct ship *s, size_t i)
{
	return &s->win[(s->head + i) % s->cap];
}

static void msg_id(char *buf, size_t len, const char *host, const uint8_t boot[16], uint64_t seg,
		   uint64_t chunk, unsigned part)
{
	char hex[33];

	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", boot[i]);
	snprintf(buf, len, "%s/%s/%" PRIu64 "/%" PRIu64 "/%u", host, hex, seg, chunk, part);
}

/* seg, chunk and part from an id msg_id() made. */
static bool parse_id(const char *id, uint64_t *seg, uint64_t *chunk, unsigned *part)
{
	const char *p = strrchr(id, '/');
	int k = 0;

	/* the last three fields: walk back over two more slashes */
	while (p && p > id && k < 2) {
		p--;
		while (p > id && *p != '/')
			p--;
		k++;
	}
	return p && sscanf(p, "/%" SCNu64 "/%" SCNu64 "/%u", seg, chunk, part) == 3;
}

/* ------------------------------------------------------------------------
 * ship.state: "ringlog-ship 1 HOST SEG CHUNK OFF" (the acknowledged
 * position), written to a temporary file and renamed over the old one, so
 * that a crash leaves either.
 */

static void state_path(const struct ship *s, char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, "%s/ship.state%s", s->dir, suffix);
}

static void state_load(struct ship *s)
{
	char path[1100], host[RINGLOG_SHIP_HOST_MAX + 1];
	uint64_t seg, chunk, off;
	FILE *f;

	state_path(s, path, sizeof(path), "");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "ringlog-ship 1 %64s %" SCNu64 " %" SCNu64 " %" SCNu64, host, &seg, &chunk,
		   &off) == 4) {
		s->ack_valid = true;
		s->ack_seg = seg;
		s->ack_chunk = chunk;
		s->ack_off = off;
	}
	fclose(f);
}

/* Called without mu: the values are passed in. */
static int state_save(const struct ship *s, uint64_t seg, uint64_t chunk, uint64_t off)
{
	char tmp[1100], path[1100];
	FILE *f;
	int err = 0;

	state_path(s, tmp, sizeof(tmp), ".tmp");
	state_path(s, path, sizeof(path), "");
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "ringlog-ship 1 %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", s->c.host, seg, chunk, off);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		err = -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	return err;
}

/* ------------------------------------------------------------------------
 * Acknowledgements (libnats's thread).
 */

/* Pop the acknowledged run at the head of the window. */
static void advance(struct ship *s)
{
	while (s->n && win_at(s, 0)->state == P_ACKED) {
		struct pend *p = win_at(s, 0);

		if (p->part + 1 == p->parts) {
			s->ack_valid = true;
			s->ack_seg = p->seg;
			s->ack_chunk = p->chunk;
			s->ack_off = p->file_end;
			s->ack_real_ns = p->last_real_ns;
			s->acked_chunks++;
			s->dirty = true;
		}
		s->acked_events += p->events;
		s->acked_bytes += p->bytes;
		if (p->not_shipped) {
			s->not_shipped_pending -= p->not_shipped < s->not_shipped_pending ?
				p->not_shipped : s->not_shipped_pending;
			s->ns_inflight = false;
		}
		s->head = (s->head + 1) % s->cap;
		s->n--;
	}
}

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	struct ship *s = closure;
	const char *id = NULL;
	uint64_t seg, chunk;
	unsigned part;

	(void)js;
	if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) != NATS_OK || !id ||
	    !parse_id(id, &seg, &chunk, &part)) {
		natsMsg_Destroy(msg);
		return;
	}
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++) {
		struct pend *p = win_at(s, i);

		if (p->seg != seg || p->chunk != chunk || p->part != part || p->state != P_SENT)
			continue;
		if (pa) {
			/* acknowledged again after a failure: back to normal */
			if (!s->failed && !strcmp(s->state, "retrying")) {
				snprintf(s->state, sizeof(s->state), "connected");
				s->error[0] = '\0';
				say(s, LOG_NOTICE, "ship: the stream acknowledges again");
			}
			p->state = P_ACKED;
			s->acked_msgs++;
			s->last_ack_real_ns = d_now(CLOCK_REALTIME);
			if (pa->Duplicate)
				s->dedup++;
		} else {
			p->state = P_FAILED;
			if (!s->failed)
				set_error(s, "retrying", "no acknowledgement from stream \"%s\" for %s: %s; "
					  "sending again from it", s->c.stream, id,
					  pae && pae->ErrText ? pae->ErrText :
					  natsStatus_GetText(pae ? pae->Err : NATS_ERR));
			s->failed = true;
		}
		break;
	}
	advance(s);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	natsMsg_Destroy(msg);
}

/* ------------------------------------------------------------------------
 * The connection and the stream (our thread).
 */

static void on_disconnected(natsConnection *nc, void *closure)
{
	struct ship *s = closure;

	(void)nc;
	pthread_mutex_lock(&s->mu);
	snprintf(s->state, sizeof(s->state), "disconnected");
	s->server[0] = '\0';
	pthread_mutex_unlock(&s->mu);
}

/* libnats reports what a server refused asynchronously too: a refusal of
 * our credentials is kept for status (check_stream()). */
static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
			   void *closure)
{
	struct ship *s = closure;
	const char *last = NULL;

	(void)sub;
	natsConnection_GetLastError(nc, &last);
	if (err != NATS_NOT_PERMITTED && !(last && strstr(last, "uthoriz")))
		return;
	pthread_mutex_lock(&s->mu);
	snprintf(s->refusal, sizeof(s->refusal), "%s", last && *last ? last : "not permitted");
	pthread_mutex_unlock(&s->mu);
}

/* The URL without "user:password@": nothing secret in status or logs. */
static void strip_userinfo(char *url)
{
	char *at = strchr(url, '@'), *scheme = strstr(url, "://");
	char *from = scheme ? scheme + 3 : url;

	if (at && at > from)
		memmove(from, at + 1, strlen(at + 1) + 1);
}

static void note_server(struct ship *s, natsConnection *nc)
{
	char url[256] = "";

	natsConnection_GetConnectedUrl(nc, url, sizeof(url));
	strip_userinfo(url);
	pthread_mutex_lock(&s->mu);
	snprintf(s->server, sizeof(s->server), "%s", url);
	if (strcmp(s->state, "refused"))
		snprintf(s->state, sizeof(s->state), "connected");
	s->max_payload = (uint64_t)natsConnection_GetMaxPayload(nc);
	pthread_mutex_unlock(&s->mu);
}

static void on_reconnected(natsConnection *nc, void *closure)
{
	struct ship *s = closure;

	note_server(s, nc);
	pthread_mutex_lock(&s->mu);
	say(s, LOG_NOTICE, "ship: connected to %s", s->server);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static int read_secret(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return 0;
}

/* libnats's options from the ship section sc (s: the callbacks' closure):
 * 0, or -EINVAL with why set. No connection is made: a reload checks a new
 * section with it before taking it. */
static int make_options(struct ship *s, const struct ship_conf *sc, natsOptions **out, char *why,
			size_t len)
{
	const struct ringlog_config *c = &sc->cfg;
	const char *urls[64];
	char list[RINGLOG_SHIP_SERVERS_MAX], *save = NULL, pw[512];
	natsOptions *o = NULL;
	natsStatus st;
	int n = 0;

	snprintf(list, sizeof(list), "%s", sc->servers);
	for (char *u = strtok_r(list, ",", &save); u && n < 64; u = strtok_r(NULL, ",", &save))
		urls[n++] = u;
	st = natsOptions_Create(&o);
	if (st == NATS_OK)
		st = natsOptions_SetServers(o, urls, n);
	if (st == NATS_OK)
		st = natsOptions_SetName(o, "ringlogd");
	/* Forever, quickly: an outage is waited out, the disk holds the
	 * backlog. */
	if (st == NATS_OK)
		st = natsOptions_SetMaxReconnect(o, -1);
	if (st == NATS_OK)
		st = natsOptions_SetReconnectWait(o, 250);
	if (st == NATS_OK)
		st = natsOptions_SetTimeout(o, 2000);
	if (st == NATS_OK)
		/* with a callback, the first connect does not wait for a
		 * server: libnats goes on trying in its own thread */
		st = natsOptions_SetRetryOnFailedConnect(o, true, on_reconnected, s);
	if (st == NATS_OK)
		st = natsOptions_SetDisconnectedCB(o, on_disconnected, s);
	if (st == NATS_OK)
		st = natsOptions_SetReconnectedCB(o, on_reconnected, s);
	if (st == NATS_OK)
		st = natsOptions_SetErrorHandler(o, on_async_error, s);
	if (st == NATS_OK && c->ship.creds[0])
		st = natsOptions_SetUserCredentialsFromFiles(o, c->ship.creds, NULL);
	if (st == NATS_OK && c->ship.user[0]) {
		if (read_secret(c->ship.password_file, pw, sizeof(pw)) < 0) {
			snprintf(why, len, "cannot read ship.password_file %.400s: %s",
				 c->ship.password_file, strerror(errno));
			natsOptions_Destroy(o);
			return -EINVAL;
		}
		st = natsOptions_SetUserInfo(o, c->ship.user, pw);
		memset(pw, 0, sizeof(pw));
	}
	if (st == NATS_OK && c->ship.tls_ca[0]) {
		st = natsOptions_SetSecure(o, true);
		if (st == NATS_OK)
			st = natsOptions_LoadCATrustedCertificates(o, c->ship.tls_ca);
	}
	if (st == NATS_OK && c->ship.tls_cert[0])
		st = natsOptions_LoadCertificatesChain(o, c->ship.tls_cert, c->ship.tls_key);
	if (st != NATS_OK) {
		const char *last = nats_GetLastError(NULL);

		snprintf(why, len, "the ship settings are refused by libnats: %s",
			 last ? last : natsStatus_GetText(st));
		natsOptions_Destroy(o);
		return -EINVAL;
	}
	*out = o;
	return 0;
}

/* No server answers: is it the service's sandbox (ship-sandbox.c)? Then
 * the state is "denied", status and the log say why and name the drop-in
 * that fixes it, and true. Looked at every 5 s at most while libnats
 * retries (it costs a connection attempt). */
static bool sandboxed(struct ship *s)
{
	uint64_t now = d_now(CLOCK_MONOTONIC);
	char why[sizeof(s->error)];
	bool denied;

	pthread_mutex_lock(&s->mu);
	if (s->probe_ns && now - s->probe_ns < 5000000000ull) {
		denied = s->sandboxed;
		pthread_mutex_unlock(&s->mu);
		return denied;
	}
	s->probe_ns = now;
	pthread_mutex_unlock(&s->mu);
	denied = ship_sandbox_denies(s->c.servers, why, sizeof(why)) < 0;
	pthread_mutex_lock(&s->mu);
	s->sandboxed = denied;
	if (denied)
		set_error(s, "denied", "%s", why);
	pthread_mutex_unlock(&s->mu);
	return denied;
}

/* Connect (libnats retries in the background while the servers are down)
 * and check the stream: 0, or -errno after setting the state; the caller
 * tries again later. */
static int connect_cluster(struct ship *s)
{
	natsOptions *o;
	jsOptions jo;
	natsStatus st;
	const char *why;

	char bad[sizeof(s->error)];

	if (make_options(s, &s->c, &o, bad, sizeof(bad)) < 0) {
		pthread_mutex_lock(&s->mu);
		set_error(s, "refused", "%s", bad);
		pthread_mutex_unlock(&s->mu);
		return -EINVAL;
	}
	st = natsConnection_Connect(&s->nc, o);
	natsOptions_Destroy(o);
	{
		/* a refusal of the first attempt, before libnats retries */
		const char *last = NULL;

		if (s->nc)
			natsConnection_GetLastError(s->nc, &last);
		if (!(last && *last))
			last = nats_GetLastError(NULL);
		if (last && strstr(last, "uthoriz")) {
			pthread_mutex_lock(&s->mu);
			snprintf(s->refusal, sizeof(s->refusal), "%s", last);
			pthread_mutex_unlock(&s->mu);
		}
	}
	if (st != NATS_OK && st != NATS_NOT_YET_CONNECTED) {
		if (sandboxed(s)) {
			natsConnection_Destroy(s->nc);
			s->nc = NULL;
			return -ECONNREFUSED;
		}
		why = nats_GetLastError(NULL);
		pthread_mutex_lock(&s->mu);
		set_error(s, "refused", "cannot connect to %s: %s%s", s->c.shown,
			  why ? why : natsStatus_GetText(st),
			  st == NATS_NOT_PERMITTED || (why && strstr(why, "uthoriz")) ?
			  " (check ship.creds, ship.user and ship.password_file)" : "");
		pthread_mutex_unlock(&s->mu);
		natsConnection_Destroy(s->nc);
		s->nc = NULL;
		return -ECONNREFUSED;
	}
	jsOptions_Init(&jo);
	jo.Wait = 5000;
	jo.PublishAsync.AckHandler = on_ack;
	jo.PublishAsync.AckHandlerClosure = s;
	jo.PublishAsync.MaxPending = (int64_t)s->c.max_pending * 2 + 64;
	st = natsConnection_JetStream(&s->js, s->nc, &jo);
	if (st != NATS_OK)
		goto fail;
	pthread_mutex_lock(&s->mu);
	snprintf(s->state, sizeof(s->state), "connecting");
	pthread_mutex_unlock(&s->mu);
	return 0;
fail:
	why = nats_GetLastError(NULL);
	pthread_mutex_lock(&s->mu);
	set_error(s, "refused", "JetStream on %s: %s", s->c.shown, why ? why : natsStatus_GetText(st));
	pthread_mutex_unlock(&s->mu);
	return -EIO;
}

/* The stream exists (or is created when ship.create_stream says so): 0,
 * -EAGAIN (not connected, no answer: try again), -ENOENT (refused). */
static int check_stream(struct ship *s)
{
	const struct ringlog_config *c = &s->c.cfg;
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus st;

	if (natsConnection_Status(s->nc) == NATS_CONN_STATUS_CLOSED) {
		/* libnats gave up (every server refused): a new connection
		 * later, so that fixed credentials are taken without a restart */
		jsCtx_Destroy(s->js);
		natsConnection_Destroy(s->nc);
		s->js = NULL;
		s->nc = NULL;
		return -ECONNREFUSED;
	}
	if (natsConnection_Status(s->nc) != NATS_CONN_STATUS_CONNECTED) {
		const char *last = NULL;
		natsStatus ls = natsConnection_GetLastError(s->nc, &last);
		bool auth = ls == NATS_NOT_PERMITTED || (last && strstr(last, "uthoriz"));
		char refusal[sizeof(s->refusal)];

		/* libnats's last error alternates between the server's refusal
		 * and "no server available" as it retries: once refused, say
		 * that until a connection succeeds */
		pthread_mutex_lock(&s->mu);
		if (auth)
			snprintf(s->refusal, sizeof(s->refusal), "%s", last && *last ? last :
				 "not permitted");
		memcpy(refusal, s->refusal, sizeof(refusal));
		if (!auth && refusal[0]) {
			auth = true;
			last = refusal;
		}
		pthread_mutex_unlock(&s->mu);
		if (!auth && sandboxed(s))
			return -EAGAIN;
		pthread_mutex_lock(&s->mu);
		set_error(s, "connecting", "no server of %s accepts a connection%s%s%s; retrying, "
			  "storing locally meanwhile%s", s->c.shown, last && *last ? " (" : "",
			  last && *last ? last : "", last && *last ? ")" : "",
			  auth ? "; check ship.creds, ship.user and ship.password_file" : "");
		pthread_mutex_unlock(&s->mu);
		return -EAGAIN;
	}
	pthread_mutex_lock(&s->mu);
	s->refusal[0] = '\0';
	pthread_mutex_unlock(&s->mu);
	note_server(s, s->nc);
	st = js_GetStreamInfo(&si, s->js, s->c.stream, NULL, &jerr);
	if (st == NATS_OK) {
		jsStreamInfo_Destroy(si);
		return 0;
	}
	if (st == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
		jsStreamConfig sc;
		/* the default subject ringlog.HOST: one stream for every host */
		const char *subjects[1] = { c->ship.subject[0] ? s->c.subject : "ringlog.>" };
		const char *why;

		if (!c->ship.create_stream) {
			pthread_mutex_lock(&s->mu);
			set_error(s, "refused", "stream \"%s\" does not exist on %s; create it (subject "
				  "%s) or set ship.create_stream; storing locally meanwhile",
				  s->c.stream, s->server, s->c.subject);
			pthread_mutex_unlock(&s->mu);
			return -ENOENT;
		}
		jsStreamConfig_Init(&sc);
		sc.Name = s->c.stream;
		sc.Subjects = subjects;
		sc.SubjectsLen = 1;
		sc.Storage = js_FileStorage;
		sc.Replicas = c->ship.replicas;
		sc.MaxAge = (int64_t)c->ship.max_age_ns;
		sc.MaxBytes = c->ship.max_bytes ? (int64_t)c->ship.max_bytes : -1;
		/* The window in which a re-send is discarded: longer than any
		 * outage a backlog is re-sent after is not needed, since the
		 * acknowledged position is never sent again. */
		sc.Duplicates = 10 * 60 * 1000000000ll;
		jerr = 0;
		st = js_AddStream(&si, s->js, &sc, NULL, &jerr);
		if (st == NATS_OK) {
			jsStreamInfo_Destroy(si);
			pthread_mutex_lock(&s->mu);
			say(s, LOG_NOTICE, "ship: created stream \"%s\" (subject %s, %u replicas)",
			    s->c.stream, subjects[0], c->ship.replicas);
			pthread_mutex_unlock(&s->mu);
			return 0;
		}
		why = nats_GetLastError(NULL);
		pthread_mutex_lock(&s->mu);
		set_error(s, "refused", "cannot create stream \"%s\" on %s: %s (error %d)", s->c.stream,
			  s->server, why ? why : natsStatus_GetText(st), (int)jerr);
		pthread_mutex_unlock(&s->mu);
		return -ENOENT;
	}
	{
		const char *why = nats_GetLastError(NULL);

		pthread_mutex_lock(&s->mu);
		set_error(s, "retrying", "stream \"%s\" on %s: %s", s->c.stream, s->server,
			  why ? why : natsStatus_GetText(st));
		pthread_mutex_unlock(&s->mu);
	}
	return -EAGAIN;
}

/* ------------------------------------------------------------------------
 * The shipping thread.
 */

/* Count a segment given up (mu held). */
static void give_up(struct ship *s, uint64_t events, uint32_t reason)
{
	if (!events)
		return;
	s->not_shipped_total += events;
	s->not_shipped_pending += events;
	s->ns_reason = reason;
	if (reason < 3)
		s->ns_by_reason[reason] += events;
}

/* Where reading starts again: the chunk after the acknowledged one, or
 * the first of the oldest segment. Sets *seg and *min_chunk. */
static void resume_point(struct ship *s, uint64_t *seg, uint64_t *min_chunk)
{
	if (s->n) {
		*seg = win_at(s, 0)->seg;
		*min_chunk = win_at(s, 0)->chunk;
	} else if (s->ack_valid) {
		*seg = s->ack_seg;
		*min_chunk = s->ack_chunk + 1;
	} else {
		*seg = shipr_next_seq(s->dir, UINT64_MAX);
		*min_chunk = 0;
	}
}

/* Publish the current chunk's message, cut into fragments of at most
 * limit bytes when it is larger (the server's max_payload: 1 MiB by
 * default, and a chunk may be 1 MiB before its header and descriptions).
 * 0, or -errno (the window is marked failed). */
static int publish(struct ship *s, struct ship_reader *r, struct ship_part *msg, size_t limit)
{
	struct ringlog_ship_hdr *h = (struct ringlog_ship_hdr *)msg->data;
	unsigned nparts = (unsigned)((msg->len + limit - 1) / limit);
	char id[RINGLOG_SHIP_ID_MAX], crc[16], parts[16];
	int err = 0;

	pthread_mutex_lock(&s->mu);
	/* The loss a resumed shipping reports, once in flight. */
	if (s->not_shipped_pending && !s->ns_inflight) {
		h->not_shipped = s->not_shipped_pending;
		h->not_shipped_reason = s->ns_reason;
		s->ns_inflight = true;
	}
	pthread_mutex_unlock(&s->mu);
	snprintf(parts, sizeof(parts), "%u", nparts);
	for (unsigned i = 0; i < nparts; i++) {
		size_t off = (size_t)i * limit, len = msg->len - off < limit ? msg->len - off : limit;
		natsMsg *m = NULL;
		natsStatus st;
		struct pend *p;

		pthread_mutex_lock(&s->mu);
		p = win_at(s, s->n);
		*p = (struct pend){ .seg = r->seg, .chunk = r->f.chunk.seq, .part = (uint16_t)i,
				    .parts = (uint16_t)nparts, .state = P_SENT,
				    .events = i ? 0 : h->events, .bytes = len,
				    .file_end = r->chunk_end, .last_real_ns = r->f.chunk.last_real_ns,
				    .not_shipped = i ? 0 : h->not_shipped };
		s->n++;
		pthread_mutex_unlock(&s->mu);

		msg_id(id, sizeof(id), s->c.host, r->f.hdr.boot_id, r->seg, r->f.chunk.seq, i);
		snprintf(crc, sizeof(crc), "%08x", ringlog_crc32c(0, msg->data + off, len));
		st = natsMsg_Create(&m, s->c.subject, NULL, (const char *)msg->data + off, (int)len);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Ringlog-Host", s->c.host);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Ringlog-Crc32c", crc);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Ringlog-Format", "1");
		if (st == NATS_OK && nparts > 1)
			st = natsMsgHeader_Set(m, "Ringlog-Parts", parts);
		if (st == NATS_OK) {
			jsPubOptions po;

			jsPubOptions_Init(&po);
			po.MaxWait = 5000;
			st = js_PublishMsgAsync(s->js, &m, &po);
		}
		natsMsg_Destroy(m);
		if (st != NATS_OK) {
			const char *why = nats_GetLastError(NULL);

			pthread_mutex_lock(&s->mu);
			p->state = P_FAILED;
			if (!s->failed)
				set_error(s, "retrying", "cannot publish to %s: %s; storing locally, "
					  "sending again when it answers", s->c.subject,
					  why ? why : natsStatus_GetText(st));
			s->failed = true;
			pthread_mutex_unlock(&s->mu);
			err = -EIO;
			break;
		}
	}
	return err;
}

/* Is there a chunk on disk past what the reader returned? (mu held) */
static bool more_on_disk(const struct ship *s, const struct ship_reader *r, int64_t last_chunk)
{
	if (!r->open)
		return true; /* look for a segment */
	if (r->seg < s->front_seg)
		return true;
	return (int64_t)last_chunk < s->front_chunk;
}

/* A message of the window awaits its ack (mu held). */
static bool outstanding(struct ship *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (win_at(s, i)->state == P_SENT)
			return true;
	return false;
}

/* Take the section a reload left in next (mu held; dropped meanwhile):
 * the connection goes, the window is the new one, empty (what was not
 * acknowledged goes again, from the acknowledged position). */
static void apply_reload(struct ship *s)
{
	struct pend *old = s->win;
	natsConnection *nc = s->nc;
	jsCtx *js = s->js;

	s->resent += s->n;
	s->c = s->next;
	s->off = !s->c.servers[0];
	if (s->next_win) {
		s->win = s->next_win;
		s->cap = s->next_cap;
		s->next_win = NULL;
	} else {
		old = NULL; /* off: the old window stays, unused */
	}
	s->head = s->n = 0;
	s->failed = false;
	s->ns_inflight = false;
	s->reload = false;
	s->nc = NULL;
	s->js = NULL;
	s->refusal[0] = '\0';
	s->server[0] = '\0';
	s->error[0] = '\0';
	s->sandboxed = false;
	s->probe_ns = 0;
	s->max_payload = 0;
	snprintf(s->state, sizeof(s->state), "%s", s->off ? "off" : "connecting");
	/* libnats's callbacks take mu: not held while it closes */
	pthread_mutex_unlock(&s->mu);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	free(old); /* an ack still coming finds the new window: ignored */
	pthread_mutex_lock(&s->mu);
}

static void *ship_main(void *arg)
{
	struct ship *s = arg;
	struct ship_reader *r = calloc(1, sizeof(*r));
	int64_t last = -1;        /* last chunk seq returned in r->seg */
	uint64_t min_chunk = 0;   /* ship chunks of r->seg from this seq */
	unsigned backoff = 250;
	bool connected = false, reposition = true;
	uint64_t saved_seg = UINT64_MAX, saved_chunk = 0, saved_off = 0;

	if (!r)
		return NULL;
	snprintf(r->dir, sizeof(r->dir), "%s", s->dir);
	pthread_mutex_lock(&s->mu);
	for (;;) {
		/* Shutdown: the last chunks go too while the cluster answers,
		 * for at most a moment; the rest goes after the next start. */
		if (s->stop_by_ns && (!connected || s->failed ||
				      d_now(CLOCK_MONOTONIC) >= s->stop_by_ns ||
				      (!s->n && !more_on_disk(s, r, last))))
			break;
		/* Persist the acknowledged position, off the lock. */
		if (s->dirty) {
			uint64_t a = s->ack_seg, b = s->ack_chunk, c = s->ack_off;

			s->dirty = false;
			pthread_mutex_unlock(&s->mu);
			if (a != saved_seg || b != saved_chunk || c != saved_off) {
				int err = state_save(s, a, b, c);

				if (err < 0) {
					pthread_mutex_lock(&s->mu);
					say(s, LOG_WARNING, "ship: cannot write %s/ship.state: %s; a "
					    "restart would send again what the cluster discards",
					    s->dir, strerror(-err));
					pthread_mutex_unlock(&s->mu);
				}
				saved_seg = a;
				saved_chunk = b;
				saved_off = c;
			}
			pthread_mutex_lock(&s->mu);
		}
		/* A reload changed the section: what is in flight comes back
		 * first (for at most a moment), so that what the old settings
		 * sent is acknowledged, never sent again under the new ones;
		 * then shipping goes on from the acknowledged position. */
		if (s->reload) {
			if (connected && !s->failed && outstanding(s) &&
			    d_now(CLOCK_MONOTONIC) < s->reload_by_ns) {
				wait_ms(s, 100);
				continue;
			}
			apply_reload(s);
			connected = false;
			reposition = true;
			continue;
		}
		if (s->off) {
			wait_ms(s, 1000);
			continue;
		}
		if (!connected) {
			int err;

			pthread_mutex_unlock(&s->mu);
			if (!s->nc)
				err = connect_cluster(s);
			else
				err = 0;
			if (!err)
				err = check_stream(s);
			pthread_mutex_lock(&s->mu);
			if (err) {
				wait_ms(s, err == -EAGAIN ? 250 : 2000);
				continue;
			}
			connected = true;
			s->error[0] = '\0';
			snprintf(s->state, sizeof(s->state), "connected");
			say(s, LOG_NOTICE, "ship: shipping to stream \"%s\" on %s as %s (subject %s)",
			    s->c.stream, s->server, s->c.host, s->c.subject);
		}
		/* After a failure: wait for everything outstanding, then send
		 * again from the first unacknowledged message. */
		if (s->failed) {
			if (outstanding(s)) {
				wait_ms(s, 100);
				continue;
			}
			s->resent += s->n;
			reposition = true;
			s->failed = false;
			wait_ms(s, backoff);
			backoff = backoff < 2000 ? backoff * 2 : 2000;
			continue;
		}
		if (reposition) {
			uint64_t seg;

			resume_point(s, &seg, &min_chunk);
			s->n = 0; /* the unacknowledged go again */
			s->ns_inflight = false;
			pthread_mutex_unlock(&s->mu);
			shipr_close(r);
			last = -1;
			if (seg != UINT64_MAX && shipr_open(r, seg) < 0) {
				uint64_t next = shipr_next_seq(s->dir, seg);

				/* gone: counted when the store deleted it */
				if (next != UINT64_MAX && shipr_open(r, next) == 0)
					min_chunk = 0;
			}
			pthread_mutex_lock(&s->mu);
			s->reading_seg = r->open ? r->seg : UINT64_MAX;
			reposition = false;
			continue;
		}
		if (s->n >= s->c.max_pending) {
			wait_ms(s, 200);
			continue;
		}
		if (!more_on_disk(s, r, last)) {
			wait_ms(s, 200);
			continue;
		}
		{
			uint64_t front = s->front_seg, limit = s->max_payload ? s->max_payload : 1u << 20;
			uint64_t max_backlog = s->c.max_backlog;
			uint64_t aseg = s->ack_valid ? s->ack_seg : 0, achunk = s->ack_chunk;
			bool ackv = s->ack_valid;
			struct ship_part msg;
			int got;

			pthread_mutex_unlock(&s->mu);
			if (!r->open) {
				/* the oldest segment not acknowledged in full, never
				 * one before the acknowledged position */
				uint64_t seg = shipr_next_seq(s->dir, ackv && aseg ? aseg - 1 : UINT64_MAX);

				if (seg != UINT64_MAX && seg <= front && shipr_open(r, seg) == 0) {
					last = -1;
					min_chunk = ackv && seg == aseg ? achunk + 1 : 0;
				}
				pthread_mutex_lock(&s->mu);
				s->reading_seg = r->open ? r->seg : UINT64_MAX;
				if (!r->open)
					wait_ms(s, 200);
				continue;
			}
			got = shipr_next(r);
			if (got <= 0) {
				/* the end of a finished segment: on to the next one,
				 * past any given up for the backlog */
				uint64_t next = r->seg < front ? shipr_next_seq(s->dir, r->seg) : UINT64_MAX;

				if (next != UINT64_MAX && next <= front) {
					uint64_t behind = shipr_bytes_from(s->dir, next);

					while (behind > max_backlog && next < front) {
						struct ringlog_seg_file f;
						const char *why;
						char path[1100];
						uint64_t ev = 0, after;

						snprintf(path, sizeof(path), "%s/%016" PRIx64 ".rlseg",
							 s->dir, next);
						if (ringlog_seg_open(&f, path, &why) == 0) {
							ev = f.hdr.events;
							ringlog_seg_close(&f);
						}
						pthread_mutex_lock(&s->mu);
						give_up(s, ev, RINGLOG_SHIP_LOST_BACKLOG);
						say(s, LOG_WARNING, "ship: %" PRIu64 " bytes not shipped are "
						    "over ship.max_backlog (%" PRIu64 "): segment %" PRIu64
						    " (%" PRIu64 " events) is not shipped", behind,
						    max_backlog, next, ev);
						pthread_mutex_unlock(&s->mu);
						after = shipr_next_seq(s->dir, next);
						if (after == UINT64_MAX)
							break;
						next = after;
						behind = shipr_bytes_from(s->dir, next);
					}
					if (shipr_open(r, next) == 0) {
						last = -1;
						min_chunk = 0;
					}
				}
				pthread_mutex_lock(&s->mu);
				s->reading_seg = r->open ? r->seg : UINT64_MAX;
				if (next == UINT64_MAX)
					wait_ms(s, 200);
				continue;
			}
			last = (int64_t)r->f.chunk.seq;
			if (r->f.chunk.seq < min_chunk) {
				shipr_absorb(r);
				pthread_mutex_lock(&s->mu);
				continue;
			}
			shipr_absorb(r);
			if (shipr_build(r, s->c.host, &msg) < 0) {
				pthread_mutex_lock(&s->mu);
				wait_ms(s, 200);
				reposition = true;
				continue;
			}
			/* room for the headers within max_payload */
			if (publish(s, r, &msg, limit > 8192 ? limit - 4096 : limit / 2) == 0)
				backoff = 250;
			free(msg.data);
			pthread_mutex_lock(&s->mu);
		}
	}
	pthread_mutex_unlock(&s->mu);
	/* Outstanding acks: a moment for them, so that ship.state says as
	 * much as the cluster has. */
	if (s->js) {
		jsPubOptions po;

		jsPubOptions_Init(&po);
		po.MaxWait = 1000;
		js_PublishAsyncComplete(s->js, &po);
	}
	pthread_mutex_lock(&s->mu);
	if (s->ack_valid) {
		uint64_t a = s->ack_seg, b = s->ack_chunk, c = s->ack_off;

		pthread_mutex_unlock(&s->mu);
		state_save(s, a, b, c);
	} else {
		pthread_mutex_unlock(&s->mu);
	}
	shipr_close(r);
	free(r->descs);
	free(r);
	return NULL;
}

/* ------------------------------------------------------------------------
 * The loop's side.
 */

static void sink_chunk(struct sink *sk, const struct sink_chunk *c)
{
	struct ship *s = g;
	const struct ringlog_chunk_hdr *h = (const void *)c->bytes;

	(void)sk;
	if (!s || !c->bytes || c->len < sizeof(*h))
		return;
	pthread_mutex_lock(&s->mu);
	if (c->segment > s->front_seg || (c->segment == s->front_seg &&
					  (int64_t)h->seq > s->front_chunk)) {
		if (c->segment > s->front_seg)
			s->front_seg = c->segment;
		s->front_chunk = (int64_t)h->seq;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

const struct sink_ops ship_sink_ops = {
	.name = "ship",
	.chunk = sink_chunk,
};

static void host_default(const struct daemon *d, char *host, size_t len)
{
	size_t n = 0;

	for (const char *p = d->st->host; *p && n + 1 < len; p++)
		host[n++] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
				   *p) ? *p : '_';
	host[n] = '\0';
	if (!n)
		snprintf(host, len, "unknown");
}

/* The ship section of c as the thread uses it. */
static void conf_from(const struct daemon *d, const struct ringlog_config *c, struct ship_conf *sc)
{
	char list[RINGLOG_SHIP_SERVERS_MAX], *save = NULL;
	size_t used = 0;

	memset(sc, 0, sizeof(*sc));
	sc->cfg = *c;
	if (c->ship.host[0])
		snprintf(sc->host, sizeof(sc->host), "%s", c->ship.host);
	else
		host_default(d, sc->host, sizeof(sc->host));
	if (c->ship.subject[0])
		snprintf(sc->subject, sizeof(sc->subject), "%s", c->ship.subject);
	else
		snprintf(sc->subject, sizeof(sc->subject), "ringlog.%s", sc->host);
	snprintf(sc->stream, sizeof(sc->stream), "%s", c->ship.stream);
	snprintf(sc->servers, sizeof(sc->servers), "%s", c->ship.servers);
	snprintf(list, sizeof(list), "%s", c->ship.servers);
	for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
		strip_userinfo(u);
		used += (size_t)snprintf(sc->shown + used, sizeof(sc->shown) - used, "%s%s",
					 used ? "," : "", u);
		if (used >= sizeof(sc->shown))
			break;
	}
	sc->max_pending = c->ship.max_pending;
	sc->max_backlog = c->ship.max_backlog < c->max_disk ? c->ship.max_backlog : c->max_disk;
	sc->interval_ns = c->ship.interval_ns;
	/* the files named: a reload after one was replaced (a new password,
	 * a renewed certificate) connects again */
	{
		const char *files[] = { c->ship.creds, c->ship.password_file, c->ship.tls_ca,
					c->ship.tls_cert, c->ship.tls_key };
		uint64_t h = 1469598103934665603ull;

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			struct stat st;
			uint64_t v[4] = { 0 };

			if (files[i][0] && stat(files[i], &st) == 0) {
				v[0] = (uint64_t)st.st_ino;
				v[1] = (uint64_t)st.st_size;
				v[2] = (uint64_t)st.st_mtim.tv_sec;
				v[3] = (uint64_t)st.st_mtim.tv_nsec;
			}
			for (size_t k = 0; k < 4; k++)
				h = (h ^ v[k]) * 1099511628211ull;
		}
		sc->files = h;
	}
}

/* Does going from a to b need a new connection (and window)? Everything
 * but live, interval and max_backlog, which apply as they are. */
static bool conf_reconnects(const struct ship_conf *a, const struct ship_conf *b)
{
	const __typeof__(a->cfg.ship) *x = &a->cfg.ship, *y = &b->cfg.ship;

	return strcmp(a->host, b->host) || strcmp(a->subject, b->subject) ||
	       strcmp(a->stream, b->stream) || strcmp(a->servers, b->servers) ||
	       strcmp(x->creds, y->creds) || strcmp(x->user, y->user) ||
	       strcmp(x->password_file, y->password_file) || strcmp(x->tls_ca, y->tls_ca) ||
	       strcmp(x->tls_cert, y->tls_cert) || strcmp(x->tls_key, y->tls_key) ||
	       a->files != b->files || a->max_pending != b->max_pending ||
	       x->create_stream != y->create_stream || x->replicas != y->replicas ||
	       x->max_age_ns != y->max_age_ns || x->max_bytes != y->max_bytes;
}

/* The window for max_pending messages: a chunk's fragments beyond it,
 * 16 MiB chunks at most (segment.h), max_payload at least 64 KiB in
 * practice. NULL when out of memory. */
static struct pend *window_new(unsigned max_pending, size_t *cap)
{
	*cap = (size_t)max_pending + 512;
	return calloc(*cap, sizeof(struct pend));
}

static void init_with(struct daemon *d, const struct ringlog_config *c)
{
	struct ship *s;

	if (!c->ship.servers[0] || g)
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->d = d;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (strlen(c->storage_dir) >= sizeof(s->dir)) {
		d_log(LOG_ERR, "ship: storage_dir is longer than %zu bytes: shipping is off",
		      sizeof(s->dir) - 1);
		free(s);
		return;
	}
	memcpy(s->dir, c->storage_dir, strlen(c->storage_dir) + 1);
	s->reading_seg = UINT64_MAX;
	state_load(s);
	snprintf(s->state, sizeof(s->state), "starting");
	g = s;
}

void ship_init(struct daemon *d)
{
	init_with(d, &d->cfg);
}

static int start_with(struct daemon *d, const struct ringlog_config *c)
{
	struct ship *s = g;
	int err;

	if (!s || s->started)
		return 0;
	conf_from(d, c, &s->c);
	s->win = window_new(s->c.max_pending, &s->cap);
	if (!s->win)
		return -ENOMEM;
	/* What is on disk now: every segment before the one being written. */
	s->front_seg = d->st->cur ? d->st->cur->seq : d->st->next_seq;
	s->front_chunk = -1;
	if ((err = pthread_create(&s->th, NULL, ship_main, s)) != 0) {
		d_log(LOG_ERR, "ship: cannot start the shipping thread: %s; storing locally only",
		      strerror(err));
		return -err;
	}
	s->started = true;
	d_log(LOG_INFO, "ship: to stream \"%s\" at %s as %s", s->c.stream, s->c.shown, s->c.host);
	return 0;
}

int ship_start(struct daemon *d)
{
	return start_with(d, &d->cfg);
}

void ship_reload(struct daemon *d, struct ringlog_config *next)
{
	struct ship *s = g;
	struct ship_conf *sc;
	struct pend *win = NULL;
	size_t cap = 0;
	char why[sizeof(s->error)];
	bool reconnect;

	if (!s || !s->started) {
		/* not shipping yet: a ship section set now starts it */
		if (s && !next->ship.servers[0])
			return;
		init_with(d, next);
		if (start_with(d, next) == 0 && g && g->started)
			d_log(LOG_NOTICE, "SIGHUP: ship: shipping starts");
		return;
	}
	sc = malloc(sizeof(*sc));
	if (!sc) {
		d_log(LOG_WARNING, "SIGHUP: ship: out of memory; keeping the running ship section");
		next->ship = d->cfg.ship;
		return;
	}
	conf_from(d, next, sc);
	if (sc->servers[0]) {
		natsOptions *o = NULL;

		/* what libnats would refuse at the next connection is refused
		 * now, while the running section still works */
		if (make_options(s, sc, &o, why, sizeof(why)) < 0) {
			d_log(LOG_WARNING, "SIGHUP: ship: keeping the running ship section (stream "
			      "\"%s\" at %s): the new one is refused: %s", s->c.stream, s->c.shown, why);
			next->ship = d->cfg.ship;
			free(sc);
			return;
		}
		natsOptions_Destroy(o);
	}
	pthread_mutex_lock(&s->mu);
	reconnect = conf_reconnects(s->reload ? &s->next : &s->c, sc) || s->off != !sc->servers[0];
	pthread_mutex_unlock(&s->mu);
	if (reconnect && sc->servers[0] && !(win = window_new(sc->max_pending, &cap))) {
		d_log(LOG_WARNING, "SIGHUP: ship: out of memory; keeping the running ship section");
		next->ship = d->cfg.ship;
		free(sc);
		return;
	}
	pthread_mutex_lock(&s->mu);
	/* these apply at once: the loop and the thread read them under mu */
	s->c.max_backlog = sc->max_backlog;
	s->c.interval_ns = sc->interval_ns;
	if (reconnect) {
		free(s->next_win);
		s->next = *sc;
		s->next_win = win;
		s->next_cap = cap;
		s->reload = true;
		s->reload_by_ns = d_now(CLOCK_MONOTONIC) + 5000000000ull;
		pthread_cond_broadcast(&s->cv);
	} else if (s->reload) {
		s->next.max_backlog = sc->max_backlog;
		s->next.interval_ns = sc->interval_ns;
	}
	pthread_mutex_unlock(&s->mu);
	if (reconnect && sc->servers[0])
		d_log(LOG_NOTICE, "SIGHUP: ship: to stream \"%s\" at %s as %s (subject %s), from the "
		      "acknowledged position, once the messages in flight are acknowledged",
		      sc->stream, sc->shown, sc->host, sc->subject);
	else if (reconnect)
		d_log(LOG_NOTICE, "SIGHUP: ship: ship.servers is empty: shipping stops, once the "
		      "messages in flight are acknowledged (ship.state keeps the position)");
	free(sc);
}

bool ship_tick(struct daemon *d)
{
	struct ship *s = g;
	char lines[8][sizeof(s->notes[0].text)];
	int levels[8], n = 0;
	uint64_t interval;
	bool seal = false;

	if (!s)
		return false;
	pthread_mutex_lock(&s->mu);
	if (s->note_gen - s->note_seen > 8)
		s->note_seen = s->note_gen - 8; /* more than 8 a tick: the newest */
	for (; s->note_seen != s->note_gen; s->note_seen++, n++) {
		unsigned i = s->note_seen % 8;

		memcpy(lines[n], s->notes[i].text, sizeof(lines[n]));
		levels[n] = s->notes[i].level;
	}
	interval = s->c.interval_ns;
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < n; i++)
		d_log(levels[i], "%s", lines[i]);
	/* ship.live: the open chunk goes at least every interval */
	if (d->cfg.ship.live && d->st->open && d->st->open->events &&
	    d_now(CLOCK_MONOTONIC) - d->st->open->opened_mono_ns >= interval)
		seal = true;
	return seal;
}

void ship_seg_deleting(struct daemon *d, const struct segfile *seg)
{
	struct ship *s = g;

	(void)d;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	/* Shipped already, or open in the thread (its descriptor keeps it
	 * readable: it goes out all the same)? */
	if ((!s->ack_valid || seg->seq > s->ack_seg) && seg->seq != s->reading_seg) {
		give_up(s, seg->events, RINGLOG_SHIP_LOST_RETENTION);
		say(s, LOG_WARNING, "ship: the disk budget deleted segment %" PRIu64 " before it was "
		    "shipped: %" PRIu64 " events not shipped", seg->seq, seg->events);
	}
	pthread_mutex_unlock(&s->mu);
}

bool ship_seg_keep(struct daemon *d, const struct segfile *seg)
{
	struct ship *s = g;
	uint64_t unshipped = 0;
	bool keep;

	if (!s)
		return false;
	pthread_mutex_lock(&s->mu);
	keep = !s->off && (!s->ack_valid || seg->seq > s->ack_seg ||
	       (seg->seq == s->ack_seg && s->ack_off < seg->bytes));
	if (keep) {
		for (struct segfile *f = d->st->segs; f; f = f->next)
			if (!s->ack_valid || f->seq >= s->ack_seg)
				unshipped += f->bytes;
		keep = unshipped <= s->c.max_backlog;
	}
	pthread_mutex_unlock(&s->mu);
	return keep;
}

json_t *ship_status(struct daemon *d)
{
	struct ship *s = g;
	json_t *j;
	uint64_t lag_bytes = 0, lag_chunks, now = d_now(CLOCK_REALTIME);
	double lag_s = 0;

	if (!d->cfg.ship.servers[0])
		return NULL;
	if (!s || !s->started) /* the thread could not start (logged) */
		return json_pack("{s:s,s:s}", "state", "off",
				 "error", "the shipping thread could not start (see the log)");
	pthread_mutex_lock(&s->mu);
	/* lag from the index: the chunks after the acknowledged one, and
	 * their bytes (a segment's header is not shipped) */
	lag_chunks = 0;
	for (struct segfile *f = d->st->segs; f; f = f->next) {
		if (!s->ack_valid || f->seq > s->ack_seg) {
			lag_bytes += f->bytes > RINGLOG_SEG_HEADER_SIZE ? f->bytes - RINGLOG_SEG_HEADER_SIZE : 0;
			lag_chunks += f->chunks;
		} else if (f->seq == s->ack_seg) {
			lag_bytes += f->bytes > s->ack_off ? f->bytes - s->ack_off : 0;
			lag_chunks += f->chunks > s->ack_chunk + 1 ? f->chunks - s->ack_chunk - 1 : 0;
		}
	}
	if (lag_chunks && s->ack_real_ns && now > s->ack_real_ns)
		lag_s = (double)(now - s->ack_real_ns) / 1e9;
	j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
		      "s:{s:I,s:I}}",
		"state", s->state, "error", s->error, "server", s->server, "stream", s->c.stream,
		"subject", s->c.subject, "host", s->c.host,
		"lag_bytes", (json_int_t)lag_bytes, "lag_chunks", (json_int_t)lag_chunks,
		"lag_seconds", lag_s, "last_ack_ns", (json_int_t)s->last_ack_real_ns,
		"acked_messages", (json_int_t)s->acked_msgs, "shipped_events", (json_int_t)s->acked_events,
		"shipped_bytes", (json_int_t)s->acked_bytes, "resent", (json_int_t)s->resent,
		"deduplicated", (json_int_t)s->dedup, "not_shipped", (json_int_t)s->not_shipped_total,
		"max_payload", (json_int_t)s->max_payload,
		"not_shipped_by", "retention", (json_int_t)s->ns_by_reason[RINGLOG_SHIP_LOST_RETENTION],
		"backlog", (json_int_t)s->ns_by_reason[RINGLOG_SHIP_LOST_BACKLOG]);
	pthread_mutex_unlock(&s->mu);
	return j;
}

void ship_stop(struct daemon *d)
{
	struct ship *s = g;

	(void)d;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop_by_ns = d_now(CLOCK_MONOTONIC) + 2000000000ull;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->th, NULL);
	jsCtx_Destroy(s->js);
	natsConnection_Destroy(s->nc);
	nats_CloseAndWait(1000);
	free(s->win);
	free(s->next_win);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	g = NULL;
}
