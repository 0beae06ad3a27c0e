// HttpServer on Boost.Beast and Boost.Asio (header-only; kept to this file and the private
// headers it includes, which compile slowly): the listener, admission of connections, start and
// drain. Each connection is a Session (serve/http_session.h); their shared state is
// serve/http_server_state.h.
#include "kiln/serve/http_server.h"

#include <future>

#include "kiln/base/error.h"
#include "kiln/base/log.h"
#include "kiln/serve/http_session.h"

namespace kiln::serve {

void detail::HttpServerState::refuse_connection(tcp::socket socket) {
  // A new socket's send buffer is empty: this short write does not block.
  const std::string body = options.error_body("too many connections (" + std::to_string(options.max_connections) +
                                              " open); try again later");
  const std::string text = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: " +
                           std::to_string(options.retry_after.count()) +
                           "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                           body;
  beast::error_code ignored;
  asio::write(socket, asio::buffer(text), ignored);
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
  metrics.record(503, std::chrono::nanoseconds(0));
}

void detail::HttpServerState::accept(const std::shared_ptr<HttpServerState>& self) {
  acceptor->async_accept(asio::make_strand(ioc), [self](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !self->acceptor->is_open()) return;  // drain() closed it
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);  // small answers: no wait for the client's delayed ACK
      std::size_t open = 0;
      {
        const std::lock_guard lock(self->mutex);
        open = self->sessions.size();
      }
      if (open >= self->options.max_connections)
        self->refuse_connection(std::move(socket));
      else
        std::make_shared<Session>(self, std::move(socket))->start();
    } else if (log_enabled(spdlog::level::debug)) {
      logger().debug("http: accept failed: {}", ec.message());
    }
    self->accept(self);
  });
}

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_shared<detail::HttpServerState>(std::move(options))) {
  KILN_CHECK(impl_->options.io_threads >= 1, "serve::HttpServer", "io_threads must be at least 1");
  KILN_CHECK(impl_->options.max_connections >= 1, "serve::HttpServer", "max_connections must be at least 1");
}

HttpServer::~HttpServer() { drain(); }

void HttpServer::route(std::string method, std::string path, Handler handler, bool admitted) {
  KILN_CHECK(!impl_->acceptor, "serve::HttpServer::route", "routes are set before start()");
  impl_->routes.push_back({std::move(method), std::move(path), std::move(handler), admitted});
}

void HttpServer::set_admission(std::function<std::string()> refuse_reason) {
  KILN_CHECK(!impl_->acceptor, "serve::HttpServer::set_admission", "admission is set before start()");
  impl_->admission = std::move(refuse_reason);
}

int HttpServer::start(const std::string& host, int port) {
  detail::HttpServerState& s = *impl_;
  KILN_CHECK(!s.acceptor, "serve::HttpServer::start", "the server was already started");
  const std::string where = host + ":" + std::to_string(port);
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  KILN_CHECK(!ec, "serve::HttpServer::start", "cannot listen on " + where + ": " + host + " is not an IP address");
  tcp::acceptor acceptor(asio::make_strand(s.ioc));  // its handlers and drain()'s close, one at a time
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor.open(endpoint.protocol(), ec);
  // SO_REUSEADDR lets a restarted server bind while old connections linger in TIME_WAIT; unlike
  // SO_REUSEPORT it never lets a second server bind a port that one listens on.
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (ec == asio::error::address_in_use)
    throw Error("serve::HttpServer::start",
                "cannot listen on " + where + ": the port is in use (is another server running there?)");
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  KILN_CHECK(!ec, "serve::HttpServer::start", "cannot listen on " + where + ": " + ec.message());
  const int bound = acceptor.local_endpoint().port();
  s.acceptor.emplace(std::move(acceptor));
  s.accept(impl_);
  s.work.emplace(s.ioc.get_executor());
  for (std::size_t i = 0; i < s.options.io_threads; ++i) s.threads.emplace_back([&s] { s.ioc.run(); });
  return bound;
}

void HttpServer::drain() {
  detail::HttpServerState& s = *impl_;
  const std::lock_guard once(s.drain_mutex);
  if (s.drained) return;
  s.drained = true;
  s.draining = true;
  if (s.acceptor) {
    // Closed at once (on the loop, where the acceptor lives): a client that connects now is
    // refused by the kernel and goes to another instance, instead of waiting in the backlog.
    std::promise<void> closed;
    asio::post(s.acceptor->get_executor(), [&s, &closed] {
      beast::error_code ignored;
      s.acceptor->close(ignored);
      closed.set_value();
    });
    if (!s.threads.empty()) closed.get_future().wait();
  }
  std::vector<std::shared_ptr<Session>> live;
  {
    const std::lock_guard lock(s.mutex);
    for (auto& [raw, weak] : s.sessions)
      if (auto session = weak.lock()) live.push_back(std::move(session));
  }
  for (auto& session : live) session->on_drain();
  live.clear();
  {
    // Every connection closes after its answer; past the deadline the rest are cut.
    std::unique_lock lock(s.mutex);
    s.changed.wait_for(lock, s.options.drain_timeout, [&] { return s.sessions.empty(); });
    if (!s.sessions.empty() && log_enabled(spdlog::level::warn))
      logger().warn("http: drain deadline ({} ms) passed with {} connections open; closing them",
                    s.options.drain_timeout.count(), s.sessions.size());
  }
  s.work.reset();
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
  {
    const std::lock_guard lock(s.mutex);
    s.stopped = true;
    for (auto& [raw, weak] : s.sessions)
      if (auto session = weak.lock()) live.push_back(std::move(session));
  }
  for (auto& session : live) session->force_close();
  live.clear();
  // What is left in the loop's queue now fails at once on closed sockets; running it lets go of
  // the sessions it holds.
  s.ioc.restart();
  s.ioc.run();
}

bool HttpServer::draining() const { return impl_->draining; }

std::size_t HttpServer::open_connections() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->sessions.size();
}
std::size_t HttpServer::in_flight() const { return impl_->in_flight.load(); }
const HttpMetrics& HttpServer::metrics() const { return impl_->metrics; }
const HttpServerOptions& HttpServer::options() const { return impl_->options; }

}  // namespace kiln::serve
