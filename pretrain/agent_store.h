// A client of PyTorch 2.x's TCPStore: the store torchrun's agent hosts on MASTER_PORT for its
// workers (TORCHELASTIC_USE_AGENT_STORE=True). LibTorch 1.x's own c10d::TCPStore speaks an older
// wire protocol (no validation message, other command codes), so a build against Debian's
// LibTorch 1.13 reaches torch 2's agent store through this client; a torch 2 build uses
// c10d::TCPStore. Keys are prefixed with "/" as c10d::TCPStore does, so both see one key space.
#ifndef GMLP_PRETRAIN_AGENT_STORE_H_
#define GMLP_PRETRAIN_AGENT_STORE_H_

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace gmlp::pretrain {

// Connects to the torch 2 TCPStore at host:port, retrying until `timeout` while nothing listens
// yet, and checks that the peer answers that protocol. Throws std::runtime_error naming host:port
// when it cannot connect or the peer is no torch 2 TCPStore; operations that outlive `timeout`
// (the store's default, as in c10d) or lose the connection throw it too.
c10::intrusive_ptr<c10d::Store> ConnectAgentStore(const std::string& host, int port,
                                                  std::chrono::milliseconds timeout);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_AGENT_STORE_H_
