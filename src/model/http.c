/*
 * http.c — one HTTP attempt over libcurl's multi interface: the transfer is driven with
 * curl_multi_poll and a POLL_MS timeout, so the cancel flag is seen within ~20 ms even
 * while the server sends nothing. Streamed 2xx bodies go straight into the SSE parser and
 * decoder; other bodies are collected (bounded).
 */
#include "model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define POLL_MS       20
#define ERR_BODY_KEEP 8192 /* bytes of an error body kept to explain it */

static bool cancelled(atomic_int *cancel) {
    return cancel && atomic_load(cancel) != 0;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
    pm__attempt *a = ud;
    size_t len = size * n;
    static const char key[] = "retry-after:";
    if (len > sizeof key - 1 && strncasecmp(buf, key, sizeof key - 1) == 0) {
        char tmp[64];
        size_t vl = len - (sizeof key - 1);
        if (vl >= sizeof tmp) vl = sizeof tmp - 1;
        memcpy(tmp, buf + sizeof key - 1, vl);
        tmp[vl] = '\0';
        char *end;
        double secs = strtod(tmp, &end);
        if (end != tmp && secs >= 0) /* an HTTP-date is ignored: backoff applies instead */
            a->retry_after_ms = (long)(secs * 1000);
    }
    return len;
}

static size_t on_write(char *data, size_t size, size_t n, void *ud) {
    pm__attempt *a = ud;
    size_t len = size * n;
    if (a->status == 0) curl_easy_getinfo(a->c->easy, CURLINFO_RESPONSE_CODE, &a->status);
    if (cancelled(a->cancel)) return 0;
    bool ok_status = a->status >= 200 && a->status < 300;
    if (a->stream && ok_status) {
        if (pm__sse_feed(&a->sse, data, len, pm__decode_sse, &a->dec) != 0) {
            if (a->sink->status == PM_OK)
                pm__sink_fail(a->sink, PM_ERR_PROTOCOL, "event stream line too long");
            a->stopped = true;
            return 0;
        }
        return len;
    }
    size_t keep = ok_status ? PM__MAX_BODY : ERR_BODY_KEEP;
    if (a->body.len + len > keep) {
        if (ok_status) {
            a->body_too_big = true;
            return 0;
        }
        len = keep > a->body.len ? keep - a->body.len : 0;
        if (len && !pb_buf_put(&a->body, data, len)) return 0;
        return size * n;
    }
    if (!pb_buf_put(&a->body, data, len)) {
        pm__sink_fail(a->sink, PM_ERR_NOMEM, "out of memory");
        a->stopped = true;
        return 0;
    }
    return len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    (void)dt, (void)dn, (void)ut, (void)un;
    return cancelled(((pm__attempt *)ud)->cancel) ? 1 : 0;
}

/* Performs the transfer; returns the curl code (CURLE_ABORTED_BY_CALLBACK on cancel). */
CURLcode pm__perform(pm__attempt *a, const char *url, struct curl_slist *hdrs, const char *body,
                     char *errbuf) {
    pm_client *c = a->c;
    CURL *e = c->easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, a);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->request_timeout_ms);
    /* a stream that stays silent longer than the idle timeout is a network failure */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                     c->idle_timeout_ms / 1000 > 0 ? c->idle_timeout_ms / 1000 : 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->proxy) curl_easy_setopt(e, CURLOPT_PROXY, c->proxy);
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) return CURLE_OUT_OF_MEMORY;
    CURLcode result = CURLE_OK;
    int running = 1;
    while (running) {
        if (curl_multi_perform(c->multi, &running) != CURLM_OK) {
            result = CURLE_OUT_OF_MEMORY;
            break;
        }
        if (cancelled(a->cancel)) {
            result = CURLE_ABORTED_BY_CALLBACK;
            running = 0;
            break;
        }
        if (running && curl_multi_poll(c->multi, NULL, 0, POLL_MS, NULL) != CURLM_OK) {
            result = CURLE_OUT_OF_MEMORY;
            break;
        }
    }
    if (result == CURLE_OK) {
        int left;
        CURLMsg *m;
        while ((m = curl_multi_info_read(c->multi, &left)))
            if (m->msg == CURLMSG_DONE && m->easy_handle == e) result = m->data.result;
    }
    curl_multi_remove_handle(c->multi, e);
    if (a->status == 0) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a->status);
    return result;
}

/* Pulls "error.message" (both providers) out of an error body. */
void pm__explain_body(pm_error *err, const pb_buf *body) {
    if (!err || !body->p) return;
    snprintf(err->body, sizeof err->body, "%s", body->p);
    pj_error_t je;
    pj_t *o = pj_loadb(body->p, body->len, 0, &je);
    const char *msg = pm__jstr(pj_object_get(o, "error"), "message");
    if (msg) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, ": %s", msg);
    }
    pj_decref(o);
}
