// The HTTP transport's safety net: a handler that throws (a bug, not a client error) gets a 500
// and the server goes on serving.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace xinfer::server {
namespace {

using tcp = net::ip::tcp;

// One request on a fresh connection; returns the response.
http::response<http::string_body> Get(int port, const std::string& target) {
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  beast::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  return res;
}

TEST(HttpServerTest, HandlerThatThrowsGets500AndServerGoesOn) {
  net::io_context ioc;
  HttpServerOptions options;
  options.error_body = [](int status, const std::string& message) {
    return "{\"status\": " + std::to_string(status) + ", \"message\": \"" + message + "\"}";
  };
  HttpServer server(ioc, options, [](HttpExchange& ex) -> net::awaitable<void> {
    if (ex.request().target() == "/throw") throw std::runtime_error("handler bug");
    co_await ex.Respond(http::status::ok, "text/plain", "fine");
  });
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  server.Start();
  std::thread runner([&] { ioc.run(); });

  for (int i = 0; i < 3; ++i) {
    auto res = Get(*port, "/throw");
    EXPECT_EQ(res.result_int(), 500);
    EXPECT_EQ(res.body(), "{\"status\": 500, \"message\": \"internal error\"}");
  }
  auto ok = Get(*port, "/ok");
  EXPECT_EQ(ok.result_int(), 200);
  EXPECT_EQ(ok.body(), "fine");

  ioc.stop();
  runner.join();
}

}  // namespace
}  // namespace xinfer::server
