/*
 * http.c — the libcurl side of the model layer: the process setup, the client's
 * easy/multi handles, and one attempt of a sans-IO call (call.c) performed over
 * libcurl's multi interface. The transfer is driven with curl_multi_poll and a POLL_MS
 * timeout, so the cancel flag is seen within ~20 ms even while the server sends
 * nothing. Status, header lines and body bytes go straight into the call, which does
 * all parsing, decoding and classification: this file only moves bytes.
 */
#include "model_int.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 20

/* One attempt's transfer state (the call does the rest). */
typedef struct xfer {
    CURL *easy;
    pm_call *call;
    atomic_int *cancel;
    bool status_known;
} xfer;

pm_status pm_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? PM_OK : PM_ERR_NOMEM;
}

void pm_global_cleanup(void) {
    curl_global_cleanup();
}

bool pm__http_init(pm_client *c) {
    c->easy = curl_easy_init();
    c->multi = curl_multi_init();
    return c->easy && c->multi;
}

void pm__http_free(pm_client *c) {
    if (c->easy) curl_easy_cleanup(c->easy);
    if (c->multi) curl_multi_cleanup(c->multi);
    c->easy = c->multi = NULL;
}

static bool cancelled(atomic_int *cancel) {
    return cancel && atomic_load(cancel) != 0;
}

static void know_status(xfer *x) {
    if (x->status_known) return;
    long st = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &st);
    pm_call_status(x->call, st);
    x->status_known = true;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
    xfer *x = ud;
    pm_call_header(x->call, buf, size * n);
    return size * n;
}

static size_t on_write(char *data, size_t size, size_t n, void *ud) {
    xfer *x = ud;
    know_status(x);
    if (cancelled(x->cancel)) return 0;
    return pm_call_body(x->call, data, size * n) == 0 ? size * n : 0;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    (void)dt, (void)dn, (void)ut, (void)un;
    return cancelled(((xfer *)ud)->cancel) ? 1 : 0;
}

/* The call's header lines as a curl list, plus "Expect:" (no 100-continue for large
 * conversations: a server that ignores it would cost a one-second stall per call).
 * NULL when out of memory. Caller frees with curl_slist_free_all. */
static struct curl_slist *header_list(const pm_http_request *r) {
    struct curl_slist *hdrs = NULL;
    for (size_t i = 0; i <= r->nheaders; i++) {
        struct curl_slist *h = curl_slist_append(hdrs, i < r->nheaders ? r->headers[i] : "Expect:");
        if (!h) {
            curl_slist_free_all(hdrs);
            return NULL;
        }
        hdrs = h;
    }
    return hdrs;
}

static pm_transport transfer(pm_client *c, xfer *x, const pm_http_request *r,
                             struct curl_slist *hdrs, char *errbuf);

pm_transport pm__perform(pm_client *c, pm_call *call, atomic_int *cancel, char *why,
                         size_t whylen) {
    const pm_http_request *r = pm_call_request(call);
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = header_list(r);
    xfer x = {.easy = c->easy, .call = call, .cancel = cancel};
    pm_transport how;
    if (!hdrs || !c->easy || !c->multi) {
        snprintf(errbuf, sizeof errbuf, "out of memory");
        how = PM_TRANSPORT_FAILED;
    } else {
        how = transfer(c, &x, r, hdrs, errbuf);
    }
    curl_slist_free_all(hdrs);
    if (how != PM_TRANSPORT_CANCELLED && cancelled(cancel)) how = PM_TRANSPORT_CANCELLED;
    snprintf(why, whylen, "%s", errbuf);
    return how;
}

/* Runs the transfer; the curl result mapped onto the call's transport outcome. */
static pm_transport transfer(pm_client *c, xfer *x, const pm_http_request *r,
                             struct curl_slist *hdrs, char *errbuf) {
    CURL *e = c->easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, x);
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
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        snprintf(errbuf, CURL_ERROR_SIZE, "out of memory");
        return PM_TRANSPORT_FAILED;
    }
    CURLcode result = CURLE_OK;
    int running = 1;
    while (running) {
        if (curl_multi_perform(c->multi, &running) != CURLM_OK) {
            result = CURLE_OUT_OF_MEMORY;
            break;
        }
        if (cancelled(x->cancel)) {
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
    know_status(x);
    if (result == CURLE_OK) return PM_TRANSPORT_OK;
    if (result == CURLE_ABORTED_BY_CALLBACK && cancelled(x->cancel)) return PM_TRANSPORT_CANCELLED;
    if (result == CURLE_PARTIAL_FILE) return PM_TRANSPORT_PARTIAL;
    if (!errbuf[0]) snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(result));
    return PM_TRANSPORT_FAILED;
}
