// Boost.Asio and Boost.Beast, as the server and `xinfer bench serve` include them.
// <utility> must come first: Boost 1.74's asio/awaitable.hpp uses std::exchange without
// including it, and include sorting would otherwise put it after.
#pragma once

#include <utility>
// Keep the Boost headers below <utility> (see above).
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
