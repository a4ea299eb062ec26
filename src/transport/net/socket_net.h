// braid's socket network: TCP between hosts behind the ncclNet v11 interface (net_abi.h).
//
// Devices: the interfaces BRAID_SOCKET_IFNAME selects (net/interface.h: with it unset, every
// interface that is up and neither loopback nor a container bridge, else loopback), one address
// each. Properties: host pointers only, maxRecvs 1, speed from /sys/class/net/<if>/speed (10 Gb/s
// when unknown), messages up to 1 GiB (test() reports sizes as int).
//
// A connection is one TCP socket. listen() binds an ephemeral port of the device's address and
// writes a 128-byte handle: magic, a random nonce, the address. connect() runs a non-blocking
// connect and sends a 16-byte hello (magic, nonce) over several calls; accept() takes pending
// connections and reads their hellos, dropping (with a warning) any whose bytes are not a hello
// for this listener, and never waits for a silent one. Every message goes as a 16-byte header
// (magic, tag, size) and its bytes; the receiver checks the header against what it posted (tag
// equal, size at most the buffer's) and fails the connection, naming both, when they disagree.
//
// Progress happens inside isend/irecv/test, in posting order: each call moves what the socket
// takes without blocking. A connection that fails (peer closed, reset, a bad header) fails every
// request on it from then on, with ncclRemoteError for a peer that went away and the reason logged
// through the logger given to init.
#pragma once

#include <string>

#include "transport/net/net_abi.h"

namespace braid::network {

/// The socket network's function table (name "BraidSocket"; braid's libnccl-net-braid.so exports it).
const NetV11& socketNetwork();

/// For braid's own proxies, which sleep in poll() when idle: the socket under a listen, send or
/// receive comm of this network (-1 for anything else).
int socketNetFd(void* comm);
/// The address (without port) of device `dev` once discovered ("" for none).
std::string socketNetDeviceAddress(int dev);
/// isend (on a send comm of this network) of one message made of two buffers, `first` then
/// `second`, sent with one system call at a time as they lie: a slot's size and tag from the FIFO,
/// its data from the caller's memory (HostFifo::publishRef). The receiver sees one message.
ncclResult_t socketNetIsendParts(void* sendComm, const void* first, size_t firstBytes, const void* second,
                                 size_t secondBytes, int tag, void** request);
/// True when the peer of a send comm of this network closed its end or died (looked at without
/// waiting; only meaningful while no send is in flight, when nothing else may arrive).
bool socketNetPeerClosed(void* sendComm);
/// Who the socket of a comm of this network leads to, as its errors say ("the listener at
/// 10.0.0.2:4242"); "" for anything else.
std::string socketNetPeer(void* comm);

}  // namespace braid::network
