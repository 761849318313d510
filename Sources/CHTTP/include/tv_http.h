#ifndef TV_HTTP_H
#define TV_HTTP_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/// A small HTTP/1.1 listener over libmicrohttpd (its own polling thread). In C because
/// MHD_start_daemon and MHD_get_connection_info are variadic, which Swift cannot call.
struct tv_http_server;

/// Bounds on what one client may cost the listener.
struct tv_http_limits {
    unsigned connections;          ///< open connections at most (more are refused at accept)
    unsigned timeout_seconds;      ///< an idle or slow connection is closed after this
    size_t memory_per_connection;  ///< request line + headers must fit (MHD answers 431/414 beyond)
    size_t max_body;               ///< request bodies beyond this are answered 413
};

/// Called once per complete request on the listener's thread. `peer` is `a.b.c.d:port` or
/// `[v6]:port`. The handler must call tv_http_respond(request, ...) exactly once before returning.
typedef void (*tv_http_handler)(void *context, void *request, const char *method, const char *path, const char *peer);

/// Starts listening on `address`. Returns NULL with a message in `error` on failure.
struct tv_http_server *tv_http_start(const struct sockaddr *address, socklen_t length, const struct tv_http_limits *limits,
                                     tv_http_handler handler, void *context, char *error, size_t error_size);
/// Like tv_http_start, on a socket bound to the interface `device` (SO_BINDTODEVICE; NULL or
/// empty: any interface): a connection to `address` that arrives on another interface is refused.
struct tv_http_server *tv_http_start_on_device(const struct sockaddr *address, socklen_t length, const char *device,
                                               const struct tv_http_limits *limits, tv_http_handler handler, void *context,
                                               char *error, size_t error_size);
/// The bound port (useful when `address` asked for port 0).
uint16_t tv_http_port(const struct tv_http_server *server);
/// Stops the thread, closes every connection and frees the server. No handler runs afterwards.
void tv_http_stop(struct tv_http_server *server);
/// Queues the answer to `request` (copied). Returns 0, or -1 when libmicrohttpd refused it.
int tv_http_respond(void *request, unsigned status, const char *content_type, const void *body, size_t length);
#endif
