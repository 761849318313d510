#include "tv_http.h"
#include <microhttpd.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result tv_mhd_result;
#else
typedef int tv_mhd_result;
#endif

struct tv_http_server {
    struct MHD_Daemon *daemon;
    tv_http_handler handler;
    void *context;
    size_t max_body;
    uint16_t port;
};

/// Per-request state between libmicrohttpd's calls of the access handler.
struct tv_request {
    size_t body;
    int too_large;
};

static void format_peer(struct MHD_Connection *connection, char *out, size_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, size, "?");
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *sa = info->client_addr;
    char text[INET6_ADDRSTRLEN];
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
        snprintf(out, size, "%s:%u", text, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
        snprintf(out, size, "[%s]:%u", text, ntohs(in6->sin6_port));
    }
}

int tv_http_respond(void *request, unsigned status, const char *content_type, const void *body, size_t length) {
    struct MHD_Connection *connection = request;
    struct MHD_Response *response = MHD_create_response_from_buffer(length, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL) return -1;
    if (content_type != NULL) MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(response, "Cache-Control", "no-store");
    tv_mhd_result r = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return r == MHD_YES ? 0 : -1;
}

static tv_mhd_result access_handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                    const char *version, const char *upload_data, size_t *upload_data_size, void **state) {
    (void)version;
    (void)upload_data;
    struct tv_http_server *server = cls;
    struct tv_request *r = *state;
    if (r == NULL) {  // first call: headers only
        r = calloc(1, sizeof *r);
        if (r == NULL) return MHD_NO;
        *state = r;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {  // a body chunk: counted, never kept
        r->body += *upload_data_size;
        if (r->body > server->max_body) r->too_large = 1;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->too_large) {
        static const char text[] = "request body too large\n";
        return tv_http_respond(connection, 413, "text/plain; charset=utf-8", text, sizeof text - 1) == 0 ? MHD_YES : MHD_NO;
    }
    char peer[INET6_ADDRSTRLEN + 16];
    format_peer(connection, peer, sizeof peer);
    server->handler(server->context, connection, method, url, peer);
    return MHD_YES;
}

static void request_completed(void *cls, struct MHD_Connection *connection, void **state, enum MHD_RequestTerminationCode code) {
    (void)cls;
    (void)connection;
    (void)code;
    free(*state);
    *state = NULL;
}

/// A listening TCP socket on `address`, bound to the interface `device` (SO_BINDTODEVICE: a
/// packet that arrives on any other interface finds no socket, even for a local address); -1 with
/// errno set on failure.
static int listen_on_device(const struct sockaddr *address, socklen_t length, const char *device) {
    int fd = socket(address->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device, (socklen_t)strlen(device)) != 0 ||
        (address->sa_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
        bind(fd, address, length) != 0 || listen(fd, 32) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

struct tv_http_server *tv_http_start(const struct sockaddr *address, socklen_t length, const struct tv_http_limits *limits,
                                     tv_http_handler handler, void *context, char *error, size_t error_size) {
    return tv_http_start_on_device(address, length, NULL, limits, handler, context, error, error_size);
}

struct tv_http_server *tv_http_start_on_device(const struct sockaddr *address, socklen_t length, const char *device,
                                               const struct tv_http_limits *limits, tv_http_handler handler, void *context,
                                               char *error, size_t error_size) {
    int listen_fd = -1;
    if (device != NULL && device[0] != 0) {
        listen_fd = listen_on_device(address, length, device);
        if (listen_fd < 0) {
            int e = errno;
            snprintf(error, error_size, "%s (bound to interface %s)", strerror(e), device);
            errno = e;
            return NULL;
        }
    }
    struct tv_http_server *server = calloc(1, sizeof *server);
    if (server == NULL) {
        if (listen_fd >= 0) close(listen_fd);
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    server->handler = handler;
    server->context = context;
    server->max_body = limits->max_body;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (address->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    uint16_t port = address->sa_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)address)->sin6_port)
                                                   : ntohs(((const struct sockaddr_in *)address)->sin_port);
    errno = 0;
    // The listen socket: ours (bound to the device) or one libmicrohttpd opens on `address`.
    // Two calls, so that each variadic option gets the type it reads.
    if (listen_fd >= 0) {
        server->daemon = MHD_start_daemon(
            flags, port, NULL, NULL, access_handler, server,
            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
            MHD_OPTION_CONNECTION_LIMIT, limits->connections,
            MHD_OPTION_CONNECTION_TIMEOUT, limits->timeout_seconds,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits->memory_per_connection,
            MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
            MHD_OPTION_END);
    } else {
        server->daemon = MHD_start_daemon(
            flags, port, NULL, NULL, access_handler, server,
            MHD_OPTION_SOCK_ADDR, address,
            MHD_OPTION_CONNECTION_LIMIT, limits->connections,
            MHD_OPTION_CONNECTION_TIMEOUT, limits->timeout_seconds,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits->memory_per_connection,
            MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
            MHD_OPTION_END);
    }
    if (server->daemon == NULL) {
        int e = errno;
        if (listen_fd >= 0) close(listen_fd);
        snprintf(error, error_size, "%s", e ? strerror(e) : "libmicrohttpd could not start");
        free(server);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
    server->port = info ? info->port : port;
    return server;
}

uint16_t tv_http_port(const struct tv_http_server *server) { return server->port; }

void tv_http_stop(struct tv_http_server *server) {
    if (server == NULL) return;
    MHD_stop_daemon(server->daemon);
    free(server);
}
