/* daemon/sink/ship-conn.c - the connection and the stream (ship-int.h):
 * libnats's options from the ship section (credentials, TLS; nothing
 * secret kept or shown), connecting with libnats's own retries, the
 * stream checked or created, and what status says when a server refuses
 * us or the service's sandbox denies the network (ship-sandbox.c).
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "sink/ship-sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libnats posts these from its own thread, late: the close of a
 * connection a reload replaced (natsConnection_Destroy) can report its
 * disconnection after the new connection is up, and must not blank the new
 * one's server and state (CI: status "connected" to server "" for 30 s).
 * Only news of the current connection counts: s->nc is changed under mu,
 * and a closed connection lives until its callbacks have run, so a new
 * one never has its address meanwhile. */
static void on_disconnected(natsConnection *nc, void *closure)
{
	struct ship *s = closure;

	pthread_mutex_lock(&s->mu);
	if (nc != s->nc) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	snprintf(s->state, sizeof(s->state), "disconnected");
	s->server[0] = '\0';
	pthread_mutex_unlock(&s->mu);
}

/* The connection the ship thread uses from now on (or none). */
static void set_nc(struct ship *s, natsConnection *nc)
{
	pthread_mutex_lock(&s->mu);
	s->nc = nc;
	pthread_mutex_unlock(&s->mu);
}

/* No longer the current one first, so that what its close reports is
 * ignored; then closed. */
static void drop_nc(struct ship *s)
{
	natsConnection *nc = s->nc;

	set_nc(s, NULL);
	natsConnection_Destroy(nc);
}

/* libnats reports what a server refused asynchronously too: a refusal of
 * our credentials is kept for status (ship_check_stream()). */
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
void ship_strip_userinfo(char *url)
{
	char *at = strchr(url, '@'), *scheme = strstr(url, "://");
	char *from = scheme ? scheme + 3 : url;

	if (at && at > from)
		memmove(from, at + 1, strlen(at + 1) + 1);
}

/* The server nc is connected to, in status: false (nothing noted) when nc
 * is no longer the current connection. */
static bool note_server(struct ship *s, natsConnection *nc)
{
	char url[256] = "";

	natsConnection_GetConnectedUrl(nc, url, sizeof(url));
	ship_strip_userinfo(url);
	pthread_mutex_lock(&s->mu);
	if (nc != s->nc) {
		pthread_mutex_unlock(&s->mu);
		return false;
	}
	snprintf(s->server, sizeof(s->server), "%s", url);
	if (strcmp(s->state, "refused"))
		snprintf(s->state, sizeof(s->state), "connected");
	s->max_payload = (uint64_t)natsConnection_GetMaxPayload(nc);
	pthread_mutex_unlock(&s->mu);
	return true;
}

static void on_reconnected(natsConnection *nc, void *closure)
{
	struct ship *s = closure;

	/* late news of a connection closed is not noted (nor the first
	 * connection before it is current: ship_check_stream notes it) */
	if (!note_server(s, nc))
		return;
	pthread_mutex_lock(&s->mu);
	ship_say(s, LOG_NOTICE, "ship: connected to %s", s->server);
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
int ship_options(struct ship *s, const struct ship_conf *sc, natsOptions **out, char *why,
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
		ship_set_error(s, "denied", "%s", why);
	pthread_mutex_unlock(&s->mu);
	return denied;
}

/* Connect (libnats retries in the background while the servers are down)
 * and check the stream: 0, or -errno after setting the state; the caller
 * tries again later. */
int ship_connect(struct ship *s)
{
	natsOptions *o;
	jsOptions jo;
	jsCtx *js = NULL;
	natsStatus st;
	const char *why;
	char bad[sizeof(s->error)];

	if (ship_options(s, &s->c, &o, bad, sizeof(bad)) < 0) {
		pthread_mutex_lock(&s->mu);
		ship_set_error(s, "refused", "%s", bad);
		pthread_mutex_unlock(&s->mu);
		return -EINVAL;
	}
	{
		natsConnection *nc = NULL;

		st = natsConnection_Connect(&nc, o);
		set_nc(s, nc);
	}
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
			drop_nc(s);
			return -ECONNREFUSED;
		}
		why = nats_GetLastError(NULL);
		pthread_mutex_lock(&s->mu);
		ship_set_error(s, "refused", "cannot connect to %s: %s%s", s->c.shown,
			  why ? why : natsStatus_GetText(st),
			  st == NATS_NOT_PERMITTED || (why && strstr(why, "uthoriz")) ?
			  " (check ship.creds, ship.user and ship.password_file)" : "");
		pthread_mutex_unlock(&s->mu);
		drop_nc(s);
		return -ECONNREFUSED;
	}
	jsOptions_Init(&jo);
	jo.Wait = 5000;
	jo.PublishAsync.AckHandler = ship_on_ack;
	jo.PublishAsync.AckHandlerClosure = s;
	jo.PublishAsync.MaxPending = (int64_t)s->c.max_pending * 2 + 64;
	st = natsConnection_JetStream(&js, s->nc, &jo);
	if (st != NATS_OK)
		goto fail;
	pthread_mutex_lock(&s->mu);
	s->js = js; /* under mu: ship_on_ack() takes the acks of this one only */
	snprintf(s->state, sizeof(s->state), "connecting");
	pthread_mutex_unlock(&s->mu);
	return 0;
fail:
	why = nats_GetLastError(NULL);
	pthread_mutex_lock(&s->mu);
	ship_set_error(s, "refused", "JetStream on %s: %s", s->c.shown, why ? why : natsStatus_GetText(st));
	pthread_mutex_unlock(&s->mu);
	return -EIO;
}

/* The stream exists (or is created when ship.create_stream says so): 0,
 * -EAGAIN (not connected, no answer: try again), -ENOENT (refused). */
int ship_check_stream(struct ship *s)
{
	const struct ringlog_config *c = &s->c.cfg;
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus st;

	if (natsConnection_Status(s->nc) == NATS_CONN_STATUS_CLOSED) {
		/* libnats gave up (every server refused): a new connection
		 * later, so that fixed credentials are taken without a restart */
		jsCtx *js = s->js;

		pthread_mutex_lock(&s->mu);
		s->js = NULL;
		pthread_mutex_unlock(&s->mu);
		jsCtx_Destroy(js);
		drop_nc(s);
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
		ship_set_error(s, "connecting", "no server of %s accepts a connection%s%s%s; retrying, "
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
			ship_set_error(s, "refused", "stream \"%s\" does not exist on %s; create it (subject "
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
			ship_say(s, LOG_NOTICE, "ship: created stream \"%s\" (subject %s, %u replicas)",
			    s->c.stream, subjects[0], c->ship.replicas);
			pthread_mutex_unlock(&s->mu);
			return 0;
		}
		why = nats_GetLastError(NULL);
		pthread_mutex_lock(&s->mu);
		ship_set_error(s, "refused", "cannot create stream \"%s\" on %s: %s (error %d)", s->c.stream,
			  s->server, why ? why : natsStatus_GetText(st), (int)jerr);
		pthread_mutex_unlock(&s->mu);
		return -ENOENT;
	}
	{
		const char *why = nats_GetLastError(NULL);

		pthread_mutex_lock(&s->mu);
		ship_set_error(s, "retrying", "stream \"%s\" on %s: %s", s->c.stream, s->server,
			  why ? why : natsStatus_GetText(st));
		pthread_mutex_unlock(&s->mu);
	}
	return -EAGAIN;
}
