// One HTTP connection of HttpServer (private to serve/; included by serve/http_server.cpp alone,
// since Beast compiles slowly). A Session runs on its own strand: wait for a request's first byte
// (idle deadline), read its header (header deadline), decide what it gets — a route, a 4xx, or
// a 503 from admission — read its body (body deadline), hand it to the route's handler, and
// write the answer the handler gives through Respond (write deadline), whenever it comes.
#pragma once
#include <array>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>

#include "kiln/base/log.h"
#include "kiln/serve/http_server_state.h"

namespace kiln::serve {

namespace beast = boost::beast;
namespace http = beast::http;
using SteadyClock = std::chrono::steady_clock;

// One connection. Every member is touched on the session's strand only, but for `answer()`,
// which posts onto it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<detail::HttpServerState> server, tcp::socket socket)
      : server_(std::move(server)), socket_(std::move(socket)), timer_(socket_.get_executor()) {}

  ~Session() {
    release_admission();
    const std::lock_guard lock(server_->mutex);
    server_->sessions.erase(this);
    server_->changed.notify_all();
  }

  void start() {
    // Room for a whole classification request (~16 KB) in one read: a buffer left to grow from
    // its first few hundred bytes took a system call per 4 KB.
    buffer_.reserve(32 * 1024);
    {
      const std::lock_guard lock(server_->mutex);
      server_->sessions.emplace(this, weak_from_this());
    }
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->wait_for_request(); });
  }

  // drain() began: an idle connection closes now; the others close after their answer. One
  // whose next request has begun to arrive is not idle: that request is answered (503).
  void on_drain() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (self->phase_ != Phase::Idle) return;
      beast::error_code ec;
      if (self->socket_.available(ec) == 0 || ec) self->close();
    });
  }

  // The handler's answer, from any thread.
  void answer(HttpResponse response) {
    const std::lock_guard lock(server_->mutex);
    if (server_->stopped) return;
    asio::post(socket_.get_executor(),
               [self = shared_from_this(), r = std::move(response)]() mutable { self->write(std::move(r)); });
  }

  // After the I/O threads ended (drain's last step): no strand runs, so called directly.
  void force_close() { close(); }

 private:
  enum class Phase { Idle, Header, Body, Handling, Writing, Closing };

  const HttpServerOptions& options() const { return server_->options; }
  static std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

  // The one deadline of the phase in progress: past it, the socket's operations are cancelled
  // and their handlers see timed_out_.
  void arm(std::chrono::milliseconds limit) {
    if (closed_) return;
    timed_out_ = false;
    const std::uint64_t generation = ++generation_;
    timer_.expires_after(limit);
    timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      if (ec || generation != self->generation_ || self->closed_) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->socket_.cancel(ignored);
    });
  }
  void disarm() {
    ++generation_;
    timer_.cancel();
  }

  void wait_for_request() {
    phase_ = Phase::Idle;
    if (server_->draining) return close();
    if (buffer_.size() > 0) return read_header();  // the client sent its next request already
    arm(options().idle_timeout);
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return self->close();
      self->read_header();
    });
  }

  void read_header() {
    phase_ = Phase::Header;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(options().max_header_bytes));
    parser_->body_limit(options().max_body_bytes);
    arm(options().header_timeout);
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    received_ = SteadyClock::now();
    if (closed_) return;
    if (timed_out_) return fail(408, "the request's header did not arrive within " + ms(options().header_timeout));
    if (ec == http::error::header_limit) return fail(too_long_status(), too_long_message());
    if (ec == http::error::body_limit) return fail(413, body_too_large());
    if (ec == http::error::end_of_stream || ec == asio::error::connection_reset || ec == asio::error::eof)
      return close();
    if (ec) return fail(400, "malformed HTTP request: " + ec.message());

    const auto& req = parser_->get();
    if (req.target().size() > options().max_target_bytes)
      return fail(414, "the request target is longer than " + std::to_string(options().max_target_bytes) + " bytes");
    method_ = std::string(req.method_string());
    target_ = std::string(req.target());
    keep_alive_ = req.keep_alive();
    const std::string path = target_.substr(0, target_.find('?'));
    bool path_known = false;
    route_ = server_->find(method_, path, path_known);
    if (!route_) return fail(path_known ? 405 : 404, "no such endpoint: " + method_ + " " + path);

    if (route_->admitted) {
      std::string refusal;
      if (server_->draining) refusal = "the server is shutting down";
      if (refusal.empty() && server_->admission) refusal = server_->admission();
      if (refusal.empty() && options().max_in_flight > 0 && server_->in_flight.load() >= options().max_in_flight)
        refusal = "the server is at capacity (" + std::to_string(options().max_in_flight) + " requests in flight)";
      if (!refusal.empty()) return refuse(refusal);
      server_->in_flight.fetch_add(1);
      admitted_ = true;
    }
    if (parser_->is_done()) return dispatch();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      phase_ = Phase::Writing;
      arm(options().write_timeout);
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      return asio::async_write(socket_, asio::buffer(kContinue),
                               [self = shared_from_this()](beast::error_code e, std::size_t) {
                                 if (e || self->timed_out_) return self->close();
                                 self->read_body();
                               });
    }
    read_body();
  }

  // A 503 decided from the header alone. Its body is read and dropped, not parsed or kept, so
  // that the connection stays usable at the cost of reading its bytes; while draining, or where
  // the client waits for 100-continue, the connection closes instead.
  void refuse(const std::string& why) {
    HttpResponse r = error(503, why);
    r.headers.emplace_back("Retry-After", std::to_string(options().retry_after.count()));
    if (server_->draining || parser_->is_done() ||
        beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      r.close = server_->draining || !parser_->is_done();
      return write(std::move(r));
    }
    pending_refusal_ = std::move(r);
    const auto length = parser_->content_length();
    if (!length) return read_body();  // chunked: only the parser knows where it ends
    // The bytes of the body already read with the header, then the rest straight into scratch.
    const std::size_t buffered = std::min<std::size_t>(buffer_.size(), *length);
    buffer_.consume(buffered);
    parser_.reset();
    phase_ = Phase::Body;
    arm(options().body_timeout);
    skip_body(*length - buffered);
  }

  // Reads and drops `left` more bytes of a refused request's body, then answers its 503.
  void skip_body(std::uint64_t left) {
    if (left == 0) {
      HttpResponse r = std::move(*pending_refusal_);
      pending_refusal_.reset();
      return write(std::move(r));
    }
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(left, scratch_.size()));
    socket_.async_read_some(asio::buffer(scratch_.data(), chunk),
                            [self = shared_from_this(), left](beast::error_code ec, std::size_t n) {
                              if (self->closed_) return;
                              if (self->timed_out_) {  // a trickling body: its 503, then close
                                self->pending_refusal_->close = true;
                                return self->skip_body(0);
                              }
                              if (ec) return self->close();
                              self->skip_body(left - n);
                            });
  }

  void read_body() {
    phase_ = Phase::Body;
    arm(options().body_timeout);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (closed_) return;
    if (timed_out_) {
      const auto& req = parser_->get();
      const std::size_t got = req.body().size();
      const auto length = parser_->content_length();
      return fail(length ? 400 : 408, length ? "the body ended after " + std::to_string(got) + " of the " +
                                                   std::to_string(*length) +
                                                   " bytes its Content-Length announced (nothing more came within " +
                                                   ms(options().body_timeout) + ")"
                                             : "the chunked body did not end within " + ms(options().body_timeout));
    }
    if (ec == http::error::body_limit) return fail(413, body_too_large());
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::connection_reset ||
        ec == asio::error::eof)
      return close();
    if (ec) return fail(400, "malformed HTTP body: " + ec.message());
    if (pending_refusal_) {
      HttpResponse r = std::move(*pending_refusal_);
      pending_refusal_.reset();
      return write(std::move(r));
    }
    dispatch();
  }

  // Answers once: a handler that drops its Respond uncalled gets its request a 500, not silence.
  struct Responder {
    std::shared_ptr<Session> session;
    std::atomic<bool> done{false};
    void operator()(HttpResponse r) {
      if (!done.exchange(true)) session->answer(std::move(r));
    }
    ~Responder() {
      if (!done) session->answer(session->error(500, "the service dropped the request without an answer"));
    }
  };

  void dispatch() {
    phase_ = Phase::Handling;
    disarm();  // the handler's time is bounded by the service (its queue, deadlines), not here
    auto& req = parser_->get();
    HttpRequest request{method_, target_, std::string(req[http::field::content_type]), std::move(req.body()),
                        received_};
    parser_.reset();
    auto responder = std::make_shared<Responder>();
    responder->session = shared_from_this();
    try {
      route_->handler(std::move(request), [responder](HttpResponse r) { (*responder)(std::move(r)); });
    } catch (const std::exception& e) {
      (*responder)(error(500, e.what()));
    }
  }

  void write(HttpResponse r) {
    if (closed_) return;
    phase_ = Phase::Writing;
    const bool close_after = r.close || !keep_alive_ || server_->draining;
    response_.emplace(static_cast<http::status>(r.status), 11);
    response_->set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) response_->set(name, value);
    response_->keep_alive(!close_after);
    response_->body() = std::move(r.body);
    response_->prepare_payload();
    server_->metrics.record(r.status, SteadyClock::now() - received_);
    release_admission();
    arm(options().write_timeout);
    http::async_write(socket_, *response_, [self = shared_from_this(), close_after](beast::error_code ec, std::size_t) {
      self->response_.reset();
      if (ec || self->timed_out_) return self->close();
      if (close_after) return self->linger();
      self->wait_for_request();
    });
  }

  // After an answer with Connection: close: stop sending, then read and drop what the client
  // still sends until it closes (briefly), so that the kernel does not reset the connection
  // over unread data and lose the answer before the client read it.
  void linger() {
    phase_ = Phase::Closing;
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    arm(std::min<std::chrono::milliseconds>(options().body_timeout, std::chrono::milliseconds(1000)));
    discard();
  }
  void discard() {
    socket_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || self->timed_out_) return self->close();
      self->discard();
    });
  }

  HttpResponse error(int status, const std::string& message) const {
    HttpResponse r;
    r.status = status;
    r.body = options().error_body(message);
    return r;
  }

  // An error found while reading: answered, then the connection closes (what the client sent
  // after it cannot be trusted to start a request).
  void fail(int status, const std::string& message) {
    if (log_enabled(spdlog::level::debug)) logger().debug("http: {} {}", status, message);
    HttpResponse r = error(status, message);
    r.close = true;
    if (received_ == SteadyClock::time_point{}) received_ = SteadyClock::now();
    write(std::move(r));
  }

  // A header over the limit: 414 when its request line alone is (the parser consumes the
  // request line once it is whole: no target yet means the line itself was too long), 431
  // otherwise.
  int too_long_status() const {
    const auto target = parser_->get().target();
    return target.empty() || target.size() > options().max_target_bytes ? 414 : 431;
  }
  std::string too_long_message() const {
    return too_long_status() == 414
               ? "the request target is longer than " + std::to_string(options().max_target_bytes) + " bytes"
               : "the request's header fields are larger than " + std::to_string(options().max_header_bytes) + " bytes";
  }
  std::string body_too_large() const {
    return "the body is larger than " + std::to_string(options().max_body_bytes) + " bytes";
  }

  void release_admission() {
    if (admitted_) {
      admitted_ = false;
      server_->leave();
    }
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    phase_ = Phase::Closing;
    release_admission();
    disarm();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  std::shared_ptr<detail::HttpServerState> server_;  // first: the event loop outlives the socket
  tcp::socket socket_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  std::optional<HttpResponse> pending_refusal_;
  std::array<char, 16 * 1024> scratch_{};  // a refused body or lingering bytes, dropped
  const detail::HttpServerState::Route* route_ = nullptr;
  std::string method_, target_;
  bool keep_alive_ = true;
  bool admitted_ = false;
  bool timed_out_ = false;
  bool closed_ = false;
  std::uint64_t generation_ = 0;
  Phase phase_ = Phase::Idle;
  SteadyClock::time_point received_{};
};

}  // namespace kiln::serve
