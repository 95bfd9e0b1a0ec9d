// HTTP/1.1 transport on Boost.Beast/Asio with C++20 coroutines: one coroutine per connection on
// its own strand (no thread per connection), keep-alive, header/body read timeouts, a body size
// limit (413), chunked streaming for Server-Sent Events, and detection of clients that hang up
// while their request is running.
//
// Ownership: HttpServer borrows the io_context (the caller runs it, on one or more threads) and
// owns the acceptor and the handler. An HttpExchange (one request/response) lives in its
// connection's coroutine and is only touched from that connection's strand, except for the
// notifier returned by MakeNotifier(), which any thread may call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "server/boost_net.h"

namespace xinfer::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

using HttpRequest = http::request<http::string_body>;
using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpServerOptions {
  // Waiting for a request's headers, including idle time between keep-alive requests.
  std::chrono::seconds header_timeout{30};
  std::chrono::seconds body_timeout{60};
  // A single write (one response, one SSE batch) to a client that does not read.
  std::chrono::seconds write_timeout{60};
  uint64_t max_body_bytes = uint64_t{32} << 20;
  uint32_t max_header_bytes = 64 << 10;
  // Body of the responses the transport itself sends (413, 431, malformed request, a handler
  // that threw), given the HTTP status and a message; the server plugs in its OpenAI error shape.
  std::function<std::string(int status, const std::string& message)> error_body;
};

struct Connection;  // http_server.cc

// One request and its response, as the handler sees it.
class HttpExchange {
 public:
  HttpExchange(std::shared_ptr<Connection> conn, HttpRequest request, bool keep_alive);
  ~HttpExchange();

  const HttpRequest& request() const { return request_; }
  // Whether the connection is kept open after this exchange; a handler may clear it.
  bool keep_alive() const { return keep_alive_; }
  void set_keep_alive(bool k) { keep_alive_ = k; }

  // Headers every response of this exchange carries (Respond, BeginStream), e.g. CORS ones.
  void AddResponseHeaders(const Headers& headers) {
    response_headers_.insert(response_headers_.end(), headers.begin(), headers.end());
  }
  // A complete response. Returns false when the client is gone.
  net::awaitable<bool> Respond(http::status status, std::string content_type, std::string body,
                               const Headers& extra = {});
  // A chunked 200 response: headers now, then Write() pieces, then End().
  net::awaitable<bool> BeginStream(std::string content_type);
  net::awaitable<bool> Write(std::string data);
  net::awaitable<bool> End();
  bool responded() const { return responded_; }

  // Returns a callable that wakes WaitEvent(); safe to call from any thread, any number of times,
  // even after the exchange ended.
  std::function<void()> MakeNotifier();
  // Suspends until the notifier was called (since the last WaitEvent) or the client hung up.
  // Starts watching the socket for a hang-up on first use.
  net::awaitable<void> WaitEvent();
  bool client_gone() const;

 private:
  std::shared_ptr<Connection> conn_;
  HttpRequest request_;
  bool keep_alive_;
  bool responded_ = false;
  bool streaming_ = false;
  Headers response_headers_;
};

using Handler = std::function<net::awaitable<void>(HttpExchange&)>;

class HttpServer {
 public:
  HttpServer(net::io_context& ioc, HttpServerOptions options, Handler handler);
  ~HttpServer();

  // Binds and listens; port 0 picks a free port. Returns the bound port.
  StatusOr<int> Listen(const std::string& host, int port);
  // Starts accepting (connections are served on the io_context's threads).
  void Start();
  // Closes the listening socket: new connections are refused. Responses finished afterwards
  // close their connection instead of keeping it alive. Thread-safe.
  void StopAccepting();
  bool draining() const { return draining_.load(); }
  // Exchanges currently being handled (for a graceful shutdown).
  int active_exchanges() const { return active_.load(); }

 private:
  net::awaitable<void> AcceptLoop();
  net::awaitable<void> Session(net::ip::tcp::socket socket);

  net::io_context& ioc_;
  HttpServerOptions options_;
  Handler handler_;
  net::ip::tcp::acceptor acceptor_;
  std::atomic<bool> draining_{false};
  std::atomic<int> active_{0};
};

}  // namespace xinfer::server
