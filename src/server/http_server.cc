#include "server/http_server.h"

#include <sys/socket.h>

#include <cerrno>

#include "base/logging.h"

namespace xinfer::server {

using tcp = net::ip::tcp;

// Per-connection state, shared by the session coroutine and the notifiers it handed out. Only
// touched on the connection's strand.
struct Connection {
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  net::steady_timer waker;  // WaitEvent sleeps on it; Wake() cancels it
  const HttpServerOptions& options;
  bool event_pending = false;
  bool peer_gone = false;
  bool watching = false;
  uint64_t watch_generation = 0;

  Connection(tcp::socket s, const HttpServerOptions& o)
      : stream(std::move(s)), waker(stream.get_executor()), options(o) {}

  void Wake() {
    event_pending = true;
    waker.cancel();
  }
};

namespace {

constexpr auto kUseAwaitable = net::use_awaitable;

// After refusing a request whose body we did not read, read (and drop) what the client is still
// sending for a moment before closing: closing a socket with unread data resets the connection,
// and the client would lose our response.
net::awaitable<void> LingeringClose(Connection& c) {
  beast::error_code ec;
  c.stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  c.stream.expires_after(std::chrono::seconds(2));
  std::vector<char> sink(64 << 10);
  uint64_t total = 0;
  while (total < (uint64_t{256} << 20)) {
    size_t n = co_await c.stream.async_read_some(net::buffer(sink),
                                                 net::redirect_error(kUseAwaitable, ec));
    if (ec) break;
    total += n;
  }
  c.stream.socket().close(ec);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// HttpExchange

HttpExchange::HttpExchange(std::shared_ptr<Connection> conn, HttpRequest request, bool keep_alive)
    : conn_(std::move(conn)), request_(std::move(request)), keep_alive_(keep_alive) {
  conn_->event_pending = false;
}

HttpExchange::~HttpExchange() {
  if (conn_->watching) {
    // Stop watching for a hang-up before the connection reads its next request.
    beast::error_code ec;
    conn_->stream.socket().cancel(ec);
    conn_->watching = false;
    ++conn_->watch_generation;
  }
}

net::awaitable<bool> HttpExchange::Respond(http::status status, std::string content_type,
                                           std::string body, const Headers& extra) {
  http::response<http::string_body> res{status, request_.version()};
  res.set(http::field::server, "xinfer");
  res.set(http::field::content_type, content_type);
  for (const auto& [k, v] : response_headers_) res.set(k, v);
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(keep_alive_);
  res.body() = std::move(body);
  res.prepare_payload();
  responded_ = true;
  beast::error_code ec;
  conn_->stream.expires_after(conn_->options.write_timeout);
  co_await http::async_write(conn_->stream, res, net::redirect_error(kUseAwaitable, ec));
  conn_->stream.expires_never();
  if (ec) conn_->peer_gone = true;
  co_return !ec;
}

net::awaitable<bool> HttpExchange::BeginStream(std::string content_type) {
  http::response<http::empty_body> res{http::status::ok, request_.version()};
  res.set(http::field::server, "xinfer");
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-cache");
  for (const auto& [k, v] : response_headers_) res.set(k, v);
  res.keep_alive(keep_alive_);
  res.chunked(true);
  responded_ = true;
  streaming_ = true;
  http::response_serializer<http::empty_body> sr{res};
  beast::error_code ec;
  conn_->stream.expires_after(conn_->options.write_timeout);
  co_await http::async_write_header(conn_->stream, sr, net::redirect_error(kUseAwaitable, ec));
  conn_->stream.expires_never();
  if (ec) conn_->peer_gone = true;
  co_return !ec;
}

net::awaitable<bool> HttpExchange::Write(std::string data) {
  if (conn_->peer_gone) co_return false;
  if (data.empty()) co_return true;
  beast::error_code ec;
  conn_->stream.expires_after(conn_->options.write_timeout);
  co_await net::async_write(conn_->stream, http::make_chunk(net::buffer(data)),
                            net::redirect_error(kUseAwaitable, ec));
  conn_->stream.expires_never();
  if (ec) conn_->peer_gone = true;
  co_return !ec;
}

net::awaitable<bool> HttpExchange::End() {
  if (conn_->peer_gone) co_return false;
  beast::error_code ec;
  conn_->stream.expires_after(conn_->options.write_timeout);
  co_await net::async_write(conn_->stream, http::make_chunk_last(),
                            net::redirect_error(kUseAwaitable, ec));
  conn_->stream.expires_never();
  streaming_ = false;
  if (ec) conn_->peer_gone = true;
  co_return !ec;
}

std::function<void()> HttpExchange::MakeNotifier() {
  std::weak_ptr<Connection> weak = conn_;
  auto executor = conn_->stream.get_executor();
  return [weak, executor] {
    net::post(executor, [weak] {
      if (auto c = weak.lock()) c->Wake();
    });
  };
}

bool HttpExchange::client_gone() const { return conn_->peer_gone; }

net::awaitable<void> HttpExchange::WaitEvent() {
  Connection& c = *conn_;
  if (!c.watching && !c.peer_gone) {
    // A client that closes its connection makes the socket readable with EOF; pipelined data
    // also makes it readable, then we simply stop watching.
    c.watching = true;
    const uint64_t generation = ++c.watch_generation;
    std::weak_ptr<Connection> weak = conn_;
    c.stream.socket().async_wait(tcp::socket::wait_read, [weak, generation](beast::error_code ec) {
      auto conn = weak.lock();
      if (!conn || conn->watch_generation != generation) return;
      conn->watching = false;
      if (ec == net::error::operation_aborted) return;
      char byte;
      ssize_t r = ::recv(conn->stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (ec || r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        conn->peer_gone = true;
        conn->Wake();
      }
    });
  }
  if (!c.event_pending && !c.peer_gone) {
    c.waker.expires_at(net::steady_timer::time_point::max());
    beast::error_code ec;
    co_await c.waker.async_wait(net::redirect_error(kUseAwaitable, ec));
  }
  c.event_pending = false;
}

// ---------------------------------------------------------------------------------------------
// HttpServer

HttpServer::HttpServer(net::io_context& ioc, HttpServerOptions options, Handler handler)
    : ioc_(ioc),
      options_(std::move(options)),
      handler_(std::move(handler)),
      acceptor_(net::make_strand(ioc)) {}

HttpServer::~HttpServer() = default;

StatusOr<int> HttpServer::Listen(const std::string& host, int port) {
  beast::error_code ec;
  auto address = net::ip::make_address(host, ec);
  if (ec) return InvalidArgument("--host {}: not an IP address", host);
  if (port < 0 || port > 65535) return InvalidArgument("--port must be in [0, 65535]");
  tcp::endpoint ep{address, static_cast<uint16_t>(port)};
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot listen on {}:{}: {}", host, port, ec.message()));
  return static_cast<int>(acceptor_.local_endpoint().port());
}

void HttpServer::Start() { net::co_spawn(acceptor_.get_executor(), AcceptLoop(), net::detached); }

void HttpServer::StopAccepting() {
  draining_ = true;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ec;
    acceptor_.close(ec);
  });
}

net::awaitable<void> HttpServer::AcceptLoop() {
  for (;;) {
    beast::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(net::make_strand(ioc_),
                                                         net::redirect_error(kUseAwaitable, ec));
    if (ec) {
      if (!acceptor_.is_open() || ec == net::error::operation_aborted) co_return;
      // E.g. out of file descriptors: back off instead of spinning.
      XI_LOG_WARN("accept failed: {}", ec.message());
      net::steady_timer t(acceptor_.get_executor(), std::chrono::milliseconds(50));
      co_await t.async_wait(net::redirect_error(kUseAwaitable, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto executor = socket.get_executor();
    net::co_spawn(executor, Session(std::move(socket)), net::detached);
  }
}

net::awaitable<void> HttpServer::Session(tcp::socket socket) {
  auto conn = std::make_shared<Connection>(std::move(socket), options_);
  beast::error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(options_.max_header_bytes);
    parser.body_limit(options_.max_body_bytes);
    conn->stream.expires_after(options_.header_timeout);
    co_await http::async_read_header(conn->stream, conn->buffer, parser,
                                     net::redirect_error(kUseAwaitable, ec));
    if (!ec && !parser.is_done()) {
      if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        http::response<http::empty_body> cont{http::status::continue_, 11};
        co_await http::async_write(conn->stream, cont, net::redirect_error(kUseAwaitable, ec));
      }
      if (!ec) {
        conn->stream.expires_after(options_.body_timeout);
        co_await http::async_read(conn->stream, conn->buffer, parser,
                                  net::redirect_error(kUseAwaitable, ec));
      }
    }
    conn->stream.expires_never();
    if (ec) {
      std::optional<std::pair<http::status, std::string>> reply;
      if (ec == http::error::body_limit) {
        reply.emplace(
            http::status::payload_too_large,
            fmt::format("request body exceeds the limit of {} bytes", options_.max_body_bytes));
      } else if (ec == http::error::header_limit) {
        reply.emplace(http::status::request_header_fields_too_large,
                      fmt::format("request headers exceed {} bytes", options_.max_header_bytes));
      } else if (ec.category() == beast::error_code(http::error::end_of_stream).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message) {
        reply.emplace(http::status::bad_request, "malformed HTTP request: " + ec.message());
      }
      if (reply) {
        http::response<http::string_body> res{reply->first, 11};
        res.set(http::field::server, "xinfer");
        res.set(http::field::content_type, "application/json");
        res.body() = options_.error_body
                         ? options_.error_body(static_cast<int>(reply->first), reply->second)
                         : reply->second;
        res.keep_alive(false);
        res.prepare_payload();
        conn->stream.expires_after(options_.write_timeout);
        co_await http::async_write(conn->stream, res, net::redirect_error(kUseAwaitable, ec));
        co_await LingeringClose(*conn);
      }
      break;
    }
    HttpRequest request = parser.release();
    bool keep = request.keep_alive() && !draining_;
    ++active_;
    bool failed = false;
    {
      HttpExchange exchange(conn, std::move(request), keep);
      try {
        co_await handler_(exchange);
      } catch (const std::exception& e) {
        // A bug, not a client error: report it and drop the connection; the server goes on.
        XI_LOG_ERROR("handler threw: {}", e.what());
        failed = true;
      }
      if (failed && !exchange.responded()) {
        exchange.set_keep_alive(false);
        // Built before the co_await: GCC 12 destroys the temporaries of a conditional expression
        // inside a co_await twice (a double free that took the whole server down).
        std::string body =
            options_.error_body ? options_.error_body(500, "internal error") : "internal error";
        co_await exchange.Respond(http::status::internal_server_error, "application/json",
                                  std::move(body));
      }
      keep = !failed && exchange.keep_alive() && exchange.responded() && !exchange.client_gone() &&
             !draining_;
    }
    --active_;
    if (!keep) break;
  }
  conn->stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  conn->stream.socket().close(ec);
}

}  // namespace xinfer::server
