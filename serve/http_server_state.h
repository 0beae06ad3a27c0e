// HttpServer's shared state (private to serve/): the options, routes and metrics, the Asio event
// loop and its threads, and the set of live sessions that drain() reaches. Sessions
// (serve/http_session.h) hold it by shared_ptr: the event loop outlives every socket.
#pragma once
#include <atomic>
#include <boost/asio.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "kiln/serve/http_server.h"

namespace kiln::serve {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class Session;

namespace detail {

// {"error": "<message>"}, the message's quotes and backslashes escaped, control characters dropped.
inline std::string default_error_body(const std::string& message) {
  std::string out = "{\"error\": \"";
  for (const char c : message) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"}";
}

}  // namespace detail

struct detail::HttpServerState {
  struct Route {
    std::string method, path;
    Handler handler;
    bool admitted = false;
  };

  HttpServerOptions options;
  std::vector<Route> routes;
  std::function<std::string()> admission;
  HttpMetrics metrics;

  asio::io_context ioc;
  // Keeps the I/O threads running while every session waits on its handler (no socket
  // operation pending, and the listener closed by drain): the answers still come by post.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;

  std::atomic<bool> draining{false};
  std::atomic<std::size_t> in_flight{0};

  // The sessions alive, for drain() to reach them; `changed` is notified when one goes or an
  // admitted request is answered.
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
  // Once set (after the I/O threads ended), an answer is no longer posted to the event loop:
  // nothing would run it, and it would keep its session alive in the loop's queue.
  bool stopped = false;

  std::mutex drain_mutex;  // one drain() at a time
  bool drained = false;

  explicit HttpServerState(HttpServerOptions o) : options(std::move(o)) {
    if (!options.error_body) options.error_body = detail::default_error_body;
  }

  const Route* find(const std::string& method, const std::string& path, bool& path_known) const {
    path_known = false;
    for (const Route& r : routes)
      if (r.path == path) {
        path_known = true;
        if (r.method == method) return &r;
      }
    return nullptr;
  }

  void leave() {
    in_flight.fetch_sub(1);
    if (draining) {
      const std::lock_guard lock(mutex);
      changed.notify_all();
    }
  }

  void accept(const std::shared_ptr<HttpServerState>& self);
  void refuse_connection(tcp::socket socket);
};

// One connection. Every member is touched on the session's strand only, but for `answer()`,

}  // namespace kiln::serve
