// An event-driven HTTP/1.1 server for model services: a few I/O threads serve every connection
// (no thread waits on a request), so a handler answers whenever its answer is ready — from a
// serve::Batcher completion, say — by calling its Respond once, from any thread.
//
// It is built to stay up under hostile load:
//   - admission: a request to a route marked `admitted` is refused with 503 + Retry-After as soon
//     as its header is read (its body is read but never parsed) while the admission function
//     says no or `max_in_flight` requests are being handled: a refusal costs far less than an
//     answer;
//   - deadlines per connection: the header, the body and each answer's write have their own,
//     and a keep-alive connection idle past `idle_timeout` is closed; `max_connections` caps
//     the sockets (one more gets a 503 and is closed);
//   - fairness: a connection has one request in flight at a time (answers go out in order), so
//     no keep-alive connection can crowd out the others;
//   - drain(): closes the listener at once, answers every request whose header was read,
//     closes idle connections, and returns within `drain_timeout`;
//   - start() refuses a port in use (no SO_REUSEPORT: two servers never split one port);
//   - every malformed request gets a clear 4xx (400, 408, 413, 414, 431) in the error format of
//     the service (`error_body`), and /metrics-style counters by status and a latency histogram
//     (HttpMetrics, http_metrics.h).
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/serve/http_metrics.h"

namespace kiln::serve {

namespace detail {
struct HttpServerState;  // http_server.cpp: the event loop, the sessions, the routes
}  // namespace detail

struct HttpRequest {
  std::string method;  // "GET", "POST"
  std::string target;  // the path and query as sent ("/v1/classify")
  std::string content_type;
  std::string body;
  std::chrono::steady_clock::time_point received;  // when its header was complete
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (Retry-After, ...)
  bool close = false;                                        // Connection: close after it
};

// Answers a request: call exactly once, from any thread (a second call is ignored).
using Respond = std::function<void(HttpResponse)>;
using Handler = std::function<void(HttpRequest&& request, Respond respond)>;

struct HttpServerOptions {
  std::size_t io_threads = 2;                      // threads running the event loop
  std::size_t max_connections = 1024;              // open sockets at once; one more: 503, closed
  std::size_t max_in_flight = 0;                   // admitted requests handled at once; 0: no cap
  std::size_t max_header_bytes = 8 * 1024;         // request line + headers; more: 414 or 431
  std::size_t max_target_bytes = 2 * 1024;         // the request line's target; more: 414
  std::size_t max_body_bytes = 1 << 20;            // more: 413
  std::chrono::milliseconds header_timeout{5000};  // first byte of a request to the end of its header
  std::chrono::milliseconds body_timeout{5000};    // end of the header to the end of the body
  std::chrono::milliseconds write_timeout{5000};   // one answer's write
  std::chrono::milliseconds idle_timeout{30000};   // a keep-alive connection with no request
  std::chrono::milliseconds drain_timeout{10000};  // drain(): the most it waits for answers
  std::chrono::seconds retry_after{1};             // a 503's advice to the client
  // The body of every error answer the server makes itself (4xx, 503): `message` in the
  // service's own format. Default: {"error": "<message>"}.
  std::function<std::string(const std::string& message)> error_body;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer();  // drain()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes, set before start(). `admitted`: the route goes through admission control (the
  // service's work); unadmitted routes (health, metrics) are always answered.
  void route(std::string method, std::string path, Handler handler, bool admitted = false);
  // Asked before each admitted request's body is read: a non-empty answer refuses the request
  // with 503 and that message (the model's queue is full, it is not ready yet).
  void set_admission(std::function<std::string()> refuse_reason);

  // Binds host:port (0: any free port) and starts the I/O threads. Returns the port. Throws
  // kiln::Error naming the address if it cannot listen there (in use, not of this machine).
  int start(const std::string& host = "127.0.0.1", int port = 0);

  // Drains: stops accepting and closes the listener at once, refuses requests that arrive on
  // open connections with 503 + Connection: close, closes idle connections, waits until every
  // admitted request is answered (at most drain_timeout), then closes the rest and joins the
  // I/O threads. Safe to call more than once and from any thread but an I/O thread.
  void drain();
  bool draining() const;

  std::size_t open_connections() const;
  std::size_t in_flight() const;
  const HttpMetrics& metrics() const;
  const HttpServerOptions& options() const;

 private:
  // Shared with every connection's session, which may outlive the HttpServer briefly (an
  // answer still held by a handler).
  std::shared_ptr<detail::HttpServerState> impl_;
};

}  // namespace kiln::serve
