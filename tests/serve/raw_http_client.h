// A loopback HTTP client on a plain socket, for what a well-behaved client library will not do:
// send a header a line at a time, announce a longer body than it sends, hold a connection open
// without a request, send a target or header of any size. It reads one answer (status, headers,
// body by Content-Length) with a time limit.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace kiln::test {

struct RawAnswer {
  int status = 0;                              // 0: none (closed first, or timed out)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }

  bool send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // One answer, waiting at most `limit` for it.
  RawAnswer read_answer(std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    RawAnswer a;
    std::size_t header_end = std::string::npos;
    while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!fill(until)) return a;
    const std::string head = buffer_.substr(0, header_end);
    buffer_.erase(0, header_end + 4);
    std::size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.size() < 12) return a;
    const int status = std::stoi(status_line.substr(9, 3));
    while (line_end != std::string::npos) {
      const std::size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line = head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      a.headers[name] = value;
    }
    const std::size_t length = a.headers.count("content-length") ? std::stoul(a.headers["content-length"]) : 0;
    while (buffer_.size() < length)
      if (!fill(until)) return a;
    a.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    a.status = status;
    return a;
  }

  // True when the server closed the connection (end of stream) within `limit`, with nothing
  // more to read.
  bool closed_by_server(std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (fill(until)) {
    }
    return eof_;
  }

 private:
  bool fill(std::chrono::steady_clock::time_point until) {
    if (eof_) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

// A POST of `body` to /v1/classify as one string.
inline std::string classify_request(const std::string& body, bool keep_alive = true) {
  return "POST /v1/classify HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + (keep_alive ? "" : "Connection: close\r\n") + "\r\n" + body;
}

}  // namespace kiln::test
