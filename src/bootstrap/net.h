// The names of src/net (sockets, addresses, interfaces, waits) that the bootstrap uses, brought into
// braid::bootstrap so that its code and its callers read as before the sockets moved to src/net.
#pragma once

#include "net/interface.h"
#include "net/socket.h"
#include "net/socket_address.h"

namespace braid::bootstrap {

using net::abortedError;
using net::chooseInterfaceAddress;
using net::Clock;
using net::Deadline;
using net::decodeAddress;
using net::encodeAddress;
using net::IfnameFilter;
using net::ifnameMatches;
using net::InterfaceAddress;
using net::kPollSliceMs;
using net::kWireAddressBytes;
using net::listInterfaces;
using net::parseHostPort;
using net::parseIfnameFilter;
using net::parseSocketFamily;
using net::PollClient;
using net::pollOnce;
using net::selectInterface;
using net::sendRecv;
using net::Socket;
using net::SocketAddress;
using net::socketFamilyFromEnv;

}  // namespace braid::bootstrap
