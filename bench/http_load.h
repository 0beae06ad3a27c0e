// A loopback HTTP load generator for the serving benchmarks: many keep-alive connections driven
// from one thread with epoll, each sending a prepared request, reading its answer, and sending
// the next, so that the client costs the machine as little as it can (a thread per connection
// would take the cores the server is measured on). Closed loop by default (each connection sends
// again at once); with a rate, open loop: requests are scheduled at fixed times and a request's
// latency counts from its scheduled time, so a slow server cannot hide its queue. An open loop
// sends every request scheduled within its window, even one whose connection is still waiting
// when the window closes, and waits (up to kOpenLoopDrain) for their answers: the requests in
// flight at the close are the ones most likely to be slow, and leaving them out would cut the
// tail the run is there to measure.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::bench {

struct HttpLoadResult {
  double seconds = 0;
  std::vector<double> latencies_us;  // answered requests (open loop: with those answered after the window)
  std::size_t answered_in_window = 0;  // 200s that came within the window: the rate
  std::size_t unanswered = 0;          // open loop: still in flight when the drain after the window ended
  std::map<int, std::size_t> by_status;
  std::size_t failed_connections = 0;
  std::string first_error;  // the body of the first answer that was not a 200
  std::size_t starved_connections = 0;  // connections that got no answer at all
  double requests_per_s() const { return seconds > 0 ? static_cast<double>(answered_in_window) / seconds : 0.0; }
  double percentile(double p) {
    if (latencies_us.empty()) return 0.0;
    std::sort(latencies_us.begin(), latencies_us.end());
    return latencies_us[std::min(latencies_us.size() - 1, static_cast<std::size_t>(p * latencies_us.size()))];
  }
};

// epoll_wait with a timeout to the nanosecond (epoll_pwait2); on a kernel without it (before
// Linux 5.11), epoll_wait with the timeout rounded up to whole milliseconds.
inline int wait_for_events(int ep, epoll_event* events, int max_events, std::chrono::nanoseconds timeout) {
  timeout = std::max(timeout, std::chrono::nanoseconds(0));
  const timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000), static_cast<long>(timeout.count() % 1'000'000'000)};
  const int n = ::epoll_pwait2(ep, events, max_events, &ts, nullptr);
  if (n >= 0 || errno != ENOSYS) return n;
  return ::epoll_wait(ep, events, max_events, static_cast<int>((timeout.count() + 999'999) / 1'000'000));
}

// How long an open loop waits after its window for the answers in flight.
inline constexpr std::chrono::seconds kOpenLoopDrain{2};

// `requests`: complete HTTP/1.1 requests (keep-alive), used in turn. `rate_per_s` 0: closed loop.
inline HttpLoadResult run_http_load(int port, int connections, const std::vector<std::string>& requests,
                                    std::chrono::duration<double> duration, double rate_per_s = 0) {
  using Clock = std::chrono::steady_clock;
  struct Conn {
    int fd = -1;
    std::string in;
    std::size_t out_sent = 0;
    const std::string* out = nullptr;
    std::size_t next = 0;
    Clock::time_point started, scheduled;
    bool waiting = false;  // open loop: sent nothing yet for its slot
    bool in_flight = false;  // a request sent, its answer not yet read
    std::size_t answers = 0;
  };
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<Conn> conns(static_cast<std::size_t>(connections));
  HttpLoadResult result;
  const auto begin = Clock::now();
  const auto until = begin + std::chrono::duration_cast<Clock::duration>(duration);
  // Open loop: connection c sends at begin + (c + k * connections) / rate.
  const auto gap =
      rate_per_s > 0
          ? std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(connections / rate_per_s))
          : Clock::duration::zero();
  auto send_some = [&](Conn& c) {
    while (c.out_sent < c.out->size()) {
      const ssize_t n = ::send(c.fd, c.out->data() + c.out_sent, c.out->size() - c.out_sent, MSG_NOSIGNAL);
      if (n <= 0) return n < 0 && errno == EAGAIN;
      c.out_sent += static_cast<std::size_t>(n);
    }
    return true;
  };
  auto start_request = [&](Conn& c, std::size_t index) {
    c.out = &requests[(c.next++ + index) % requests.size()];
    c.out_sent = 0;
    c.started = rate_per_s > 0 ? c.scheduled : Clock::now();
    c.waiting = false;
    c.in_flight = true;
    return send_some(c);
  };
  for (int i = 0; i < connections; ++i) {
    Conn& c = conns[static_cast<std::size_t>(i)];
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error(std::string("http load: cannot connect: ") + std::strerror(errno));
    const int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    if (rate_per_s > 0) {
      c.scheduled = begin + gap * i / connections;
      c.waiting = c.scheduled < until;
    } else {
      start_request(c, static_cast<std::size_t>(i));
    }
  }
  std::vector<epoll_event> events(static_cast<std::size_t>(connections));
  int open = connections;
  auto any_in_flight = [&] {
    return std::any_of(conns.begin(), conns.end(), [](const Conn& c) { return c.fd >= 0 && c.in_flight; });
  };
  while (open > 0) {
    const auto now = Clock::now();
    // Sleep until the next scheduled send to the nanosecond: a timeout in whole milliseconds
    // rounds a gap under 1 ms to 0, and the client would spin a core the server is measured on.
    Clock::duration timeout = now < until ? until - now : until + kOpenLoopDrain - now;
    if (rate_per_s > 0) {
      for (Conn& c : conns)
        if (c.fd >= 0 && c.waiting) {
          if (c.scheduled <= now)
            start_request(c, 0);
          else
            timeout = std::min(timeout, c.scheduled - now);
        }
    }
    if (now >= until && (rate_per_s <= 0 || now >= until + kOpenLoopDrain || !any_in_flight())) break;
    const int n = wait_for_events(ep, events.data(), connections, timeout);
    for (int e = 0; e < n; ++e) {
      Conn& c = conns[events[e].data.u32];
      char chunk[65536];
      const ssize_t got = ::recv(c.fd, chunk, sizeof chunk, 0);
      if (got <= 0) {
        ::close(c.fd);
        c.fd = -1;
        --open;
        ++result.failed_connections;
        continue;
      }
      c.in.append(chunk, static_cast<std::size_t>(got));
      for (;;) {  // whole answers in the buffer
        const std::size_t head_end = c.in.find("\r\n\r\n");
        if (head_end == std::string::npos) break;
        std::size_t length = 0;
        const std::size_t at = c.in.find("Content-Length: ");
        if (at != std::string::npos && at < head_end) length = std::stoul(c.in.substr(at + 16, 12));
        if (c.in.size() < head_end + 4 + length) break;
        const int status = std::stoi(c.in.substr(9, 3));
        if (status != 200 && result.first_error.empty()) result.first_error = c.in.substr(head_end + 4, length);
        c.in.erase(0, head_end + 4 + length);
        const auto done = Clock::now();
        ++result.by_status[status];
        ++c.answers;
        c.in_flight = false;
        if (status == 200) {
          result.latencies_us.push_back(std::chrono::duration<double, std::micro>(done - c.started).count());
          if (done < until) ++result.answered_in_window;
        }
        if (rate_per_s > 0) {
          c.scheduled += gap;
          c.waiting = c.scheduled < until;  // the schedule ends with the window
          if (c.waiting && c.scheduled <= done) start_request(c, 0);
        } else if (done < until) {
          start_request(c, 0);
        }
      }
    }
  }
  result.seconds = std::chrono::duration<double>(std::min(Clock::now(), until) - begin).count();
  for (Conn& c : conns) {
    if (rate_per_s > 0 && c.fd >= 0 && c.in_flight) ++result.unanswered;
    if (c.fd >= 0) ::close(c.fd);
    if (c.answers == 0) ++result.starved_connections;
  }
  ::close(ep);
  return result;
}

// A keep-alive POST of `body` to `path`.
inline std::string http_post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace kiln::bench
